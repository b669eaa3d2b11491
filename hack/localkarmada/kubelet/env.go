package kubelet

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
)

// objectGetter reads the Secrets and ConfigMaps a pod refers to. A missing object is a NotFound error.
type objectGetter interface {
	secret(namespace, name string) (*corev1.Secret, error)
	configMap(namespace, name string) (*corev1.ConfigMap, error)
}

// podIP is the address of every pod and of the node: the machine's loopback.
const podIP = "127.0.0.1"

// resolveEnv computes a container's environment as the kubelet does (makeEnvironmentVariables): envFrom first,
// in order, then env, each value expanding $(VAR) references to variables defined before it and to the service
// variables; then the service variables the container did not define. Variables keep the position of their first
// definition. A reference to a missing Secret, ConfigMap or key that is not optional is an error: the
// container's CreateContainerConfigError.
func resolveEnv(pod *corev1.Pod, c *corev1.Container, objects objectGetter, allocatable corev1.ResourceList, serviceEnv map[string]string) ([]corev1.EnvVar, error) {
	values := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := values[k]; !ok {
			order = append(order, k)
		}
		values[k] = v
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := objects.configMap(pod.Namespace, from.ConfigMapRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, err
			}
			for _, k := range sortedKeys(cm.Data) {
				if validEnvName(from.Prefix + k) {
					set(from.Prefix+k, cm.Data[k])
				}
			}
		case from.SecretRef != nil:
			s, err := objects.secret(pod.Namespace, from.SecretRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && isTrue(from.SecretRef.Optional) {
					continue
				}
				return nil, err
			}
			for _, k := range sortedKeys(s.Data) {
				if validEnvName(from.Prefix + k) {
					set(from.Prefix+k, string(s.Data[k]))
				}
			}
		}
	}
	lookup := mappingOf(values, serviceEnv)
	for _, e := range c.Env {
		value := e.Value
		switch {
		case value != "":
			value = Expand(value, lookup)
		case e.ValueFrom != nil:
			var skip bool
			var err error
			value, skip, err = envSourceValue(pod, c, e.ValueFrom, objects, allocatable)
			if err != nil {
				return nil, err
			}
			if skip {
				continue
			}
		}
		set(e.Name, value)
	}
	env := make([]corev1.EnvVar, 0, len(order)+len(serviceEnv))
	for _, k := range order {
		env = append(env, corev1.EnvVar{Name: k, Value: values[k]})
	}
	for _, k := range sortedKeys(serviceEnv) {
		if _, ok := values[k]; !ok {
			env = append(env, corev1.EnvVar{Name: k, Value: serviceEnv[k]})
		}
	}
	return env, nil
}

// envSourceValue resolves one valueFrom; skip is true for an optional reference to something missing.
func envSourceValue(pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource, objects objectGetter, allocatable corev1.ResourceList) (value string, skip bool, err error) {
	switch {
	case from.FieldRef != nil:
		v, err := podFieldValue(pod, from.FieldRef.FieldPath)
		return v, false, err
	case from.ResourceFieldRef != nil:
		v, err := resourceFieldValue(pod, c.Name, from.ResourceFieldRef, allocatable)
		return v, false, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := objects.configMap(pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", true, nil
			}
			return "", false, err
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", true, nil
			}
			return "", false, fmt.Errorf("couldn't find key %v in ConfigMap %v/%v", ref.Key, pod.Namespace, ref.Name)
		}
		return v, false, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := objects.secret(pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", true, nil
			}
			return "", false, err
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", true, nil
			}
			return "", false, fmt.Errorf("couldn't find key %v in Secret %v/%v", ref.Key, pod.Namespace, ref.Name)
		}
		return string(v), false, nil
	case from.FileKeyRef != nil:
		return "", false, fmt.Errorf("env from a file (fileKeyRef) is not supported by local-kubelet")
	}
	return "", false, nil
}

func isTrue(b *bool) bool { return b != nil && *b }

// validEnvName accepts what the kubelet passes on from envFrom: any printable name without "=".
func validEnvName(k string) bool {
	if k == "" || strings.Contains(k, "=") {
		return false
	}
	for _, r := range k {
		if r < ' ' || r > '~' {
			return false
		}
	}
	return true
}

// podFieldValue is the downward API's value of a pod field (fieldRef), as the kubelet computes it for env and
// volumes.
func podFieldValue(pod *corev1.Pod, fieldPath string) (string, error) {
	if key, ok := subscript(fieldPath, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(fieldPath, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs", "status.hostIP", "status.hostIPs":
		return podIP, nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", fieldPath)
}

// subscript parses "<prefix>['key']".
func subscript(fieldPath, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(fieldPath, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// formatMap renders labels or annotations as the downward API does: key="value" lines, sorted by key.
func formatMap(m map[string]string) string {
	var lines []string
	for _, k := range sortedKeys(m) {
		lines = append(lines, fmt.Sprintf("%v=%q", k, m[k]))
	}
	return strings.Join(lines, "\n")
}

// resourceFieldValue is the downward API's value of a container resource (resourceFieldRef): the request or the
// limit divided by the divisor, rounded up; an unset limit is the node's allocatable amount.
func resourceFieldValue(pod *corev1.Pod, defaultContainer string, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	containerName := ref.ContainerName
	if containerName == "" {
		containerName = defaultContainer
	}
	var container *corev1.Container
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == containerName {
				container = &list[i]
			}
		}
	}
	if container == nil {
		return "", fmt.Errorf("container %s not found", containerName)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, resName, ok := strings.Cut(ref.Resource, ".")
	if !ok || kind != "limits" && kind != "requests" {
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	var q resource.Quantity
	switch kind {
	case "requests":
		q = container.Resources.Requests[corev1.ResourceName(resName)]
	case "limits":
		var set bool
		q, set = container.Resources.Limits[corev1.ResourceName(resName)]
		if !set {
			q = allocatable[corev1.ResourceName(resName)]
		}
	}
	switch {
	case resName == "cpu":
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case resName == "memory" || resName == "ephemeral-storage" || strings.HasPrefix(resName, "hugepages-"):
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
}

// serviceEnv is what the kubelet adds for the cluster's "kubernetes" Service: here the host apiserver itself,
// on loopback. Other Services' link variables are not set: their cluster IPs would lead nowhere.
func serviceEnv(host string, port int) map[string]string {
	p := strconv.Itoa(port)
	addr := "tcp://" + host + ":" + p
	prefix := "KUBERNETES_PORT_" + p + "_TCP"
	return map[string]string{
		"KUBERNETES_SERVICE_HOST":       host,
		"KUBERNETES_SERVICE_PORT":       p,
		"KUBERNETES_SERVICE_PORT_HTTPS": p,
		"KUBERNETES_PORT":               addr,
		prefix:                          addr,
		prefix + "_PROTO":               "tcp",
		prefix + "_PORT":                p,
		prefix + "_ADDR":                host,
	}
}

// envMap turns an environment list into a map, later entries winning.
func envMap(env []corev1.EnvVar) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		m[e.Name] = e.Value
	}
	return m
}

// mergeEnv overlays env on base (KEY=VALUE strings, as an image config holds them): a later definition replaces
// an earlier one in place.
func mergeEnv(base []string, env []corev1.EnvVar) []string {
	index := map[string]int{}
	var out []string
	put := func(k, v string) {
		if i, ok := index[k]; ok {
			out[i] = k + "=" + v
			return
		}
		index[k] = len(out)
		out = append(out, k+"="+v)
	}
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		put(k, v)
	}
	for _, e := range env {
		put(e.Name, e.Value)
	}
	return out
}

// lookupEnv finds a variable in KEY=VALUE strings.
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, _ := strings.Cut(env[i], "="); k == key {
			return v, true
		}
	}
	return "", false
}
