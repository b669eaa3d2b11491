package kubelet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fakeObjects serves Secrets and ConfigMaps from maps, by name.
type fakeObjects struct {
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
	tokens     map[string]string
}

func (f fakeObjects) secret(_, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
}

func (f fakeObjects) configMap(_, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.configMaps[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
}

func (f fakeObjects) serviceAccountToken(pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	return []byte(f.tokens[source.Audience] + "@" + pod.Spec.ServiceAccountName), nil
}

var testObjects = fakeObjects{
	secrets: map[string]*corev1.Secret{
		"creds": {Data: map[string][]byte{"user": []byte("admin"), "password": []byte("s3cret")}},
	},
	configMaps: map[string]*corev1.ConfigMap{
		"settings": {Data: map[string]string{"LEVEL": "debug", "MODE": "fast", "bad=name": "x"}},
	},
	tokens: map[string]string{"": "default-audience-token", "vault": "vault-token"},
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-0", Namespace: "team-a", UID: "1234",
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": `say "hi"`},
		},
		Spec: corev1.PodSpec{
			NodeName: "host-node", ServiceAccountName: "web",
			Containers: []corev1.Container{{
				Name: "app",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
			}},
		},
	}
}

func TestResolveEnv(t *testing.T) {
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi")}
	service := map[string]string{"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	res := func(r, divisor string) *corev1.EnvVarSource {
		s := &corev1.ResourceFieldSelector{Resource: r}
		if divisor != "" {
			s.Divisor = resource.MustParse(divisor)
		}
		return &corev1.EnvVarSource{ResourceFieldRef: s}
	}
	cases := []struct {
		name    string
		envFrom []corev1.EnvFromSource
		env     []corev1.EnvVar
		// withService adds the service variables.
		withService bool
		want        []corev1.EnvVar
		wantErr     string
	}{
		{
			name:        "values expand variables defined before them and the service variables",
			withService: true,
			env: []corev1.EnvVar{
				{Name: "A", Value: "a"},
				{Name: "B", Value: "$(A)-b-$(C)"},
				{Name: "C", Value: "c"},
				{Name: "URL", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
				{Name: "ESCAPED", Value: "$$(A)"},
			},
			want: []corev1.EnvVar{
				{Name: "A", Value: "a"}, {Name: "B", Value: "a-b-$(C)"}, {Name: "C", Value: "c"},
				{Name: "URL", Value: "https://127.0.0.1:6443"}, {Name: "ESCAPED", Value: "$(A)"},
				{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"}, {Name: "KUBERNETES_SERVICE_PORT", Value: "6443"},
			},
		},
		{
			name: "fieldRef",
			env: []corev1.EnvVar{
				{Name: "POD_NAME", ValueFrom: field("metadata.name")},
				{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
				{Name: "POD_UID", ValueFrom: field("metadata.uid")},
				{Name: "APP", ValueFrom: field("metadata.labels['app']")},
				{Name: "MISSING_LABEL", ValueFrom: field("metadata.labels['nope']")},
				{Name: "NOTE", ValueFrom: field("metadata.annotations['note']")},
				{Name: "NODE", ValueFrom: field("spec.nodeName")},
				{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
				{Name: "POD_IP", ValueFrom: field("status.podIP")},
				{Name: "HOST_IP", ValueFrom: field("status.hostIP")},
				{Name: "LABELS", ValueFrom: field("metadata.labels")},
			},
			want: []corev1.EnvVar{
				{Name: "POD_NAME", Value: "web-0"}, {Name: "POD_NAMESPACE", Value: "team-a"}, {Name: "POD_UID", Value: "1234"},
				{Name: "APP", Value: "web"}, {Name: "MISSING_LABEL", Value: ""}, {Name: "NOTE", Value: `say "hi"`},
				{Name: "NODE", Value: "host-node"}, {Name: "SA", Value: "web"},
				{Name: "POD_IP", Value: "127.0.0.1"}, {Name: "HOST_IP", Value: "127.0.0.1"},
				{Name: "LABELS", Value: "app=\"web\"\ntier=\"front\""},
			},
		},
		{
			name: "resourceFieldRef: rounded up, an unset limit is the node's allocatable",
			env: []corev1.EnvVar{
				{Name: "CPU_REQUEST", ValueFrom: res("requests.cpu", "")},
				{Name: "CPU_REQUEST_MILLIS", ValueFrom: res("requests.cpu", "1m")},
				{Name: "CPU_LIMIT", ValueFrom: res("limits.cpu", "")},
				{Name: "MEMORY_LIMIT_MI", ValueFrom: res("limits.memory", "1Mi")},
				{Name: "MEMORY_REQUEST", ValueFrom: res("requests.memory", "")},
			},
			want: []corev1.EnvVar{
				{Name: "CPU_REQUEST", Value: "1"}, {Name: "CPU_REQUEST_MILLIS", Value: "250"}, {Name: "CPU_LIMIT", Value: "16"},
				{Name: "MEMORY_LIMIT_MI", Value: "128"}, {Name: "MEMORY_REQUEST", Value: "67108864"},
			},
		},
		{
			name: "secretKeyRef and configMapKeyRef, optional ones skipped",
			env: []corev1.EnvVar{
				{Name: "USER", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "user"}}},
				{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "LEVEL"}}},
				{Name: "NO_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: ptr.To(true)}}},
				{Name: "NO_KEY", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "absent", Optional: ptr.To(true)}}},
			},
			want: []corev1.EnvVar{{Name: "USER", Value: "admin"}, {Name: "LEVEL", Value: "debug"}},
		},
		{
			name: "envFrom, with a prefix; env overrides it in place; invalid names dropped",
			envFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
				{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
			},
			env: []corev1.EnvVar{{Name: "MODE", Value: "slow-$(LEVEL)"}},
			want: []corev1.EnvVar{
				{Name: "LEVEL", Value: "debug"}, {Name: "MODE", Value: "slow-debug"},
				{Name: "DB_password", Value: "s3cret"}, {Name: "DB_user", Value: "admin"},
			},
		},
		{
			name: "a missing Secret is an error",
			env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k"}}}},
			wantErr: `secret "absent" not found`,
		},
		{
			name: "a missing key is an error",
			env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}}},
			wantErr: "couldn't find key token in Secret team-a/creds",
		},
		{
			name:    "a missing envFrom ConfigMap is an error",
			envFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}},
			wantErr: `configmap "absent" not found`,
		},
		{
			name:    "an unsupported field",
			env:     []corev1.EnvVar{{Name: "X", ValueFrom: field("spec.schedulerName")}},
			wantErr: "unsupported fieldPath: spec.schedulerName",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			c := &pod.Spec.Containers[0]
			c.EnvFrom, c.Env = tc.envFrom, tc.env
			var svc map[string]string
			if tc.withService {
				svc = service
			}
			got, err := resolveEnv(pod, c, testObjects, allocatable, svc)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommandLine(t *testing.T) {
	image := v1.Config{Entrypoint: []string{"/usr/local/bin/app"}, Cmd: []string{"--default"}}
	env := map[string]string{"PORT": "9443", "DIR": "/etc/app"}
	cases := []struct {
		name          string
		command, args []string
		image         v1.Config
		want          []string
	}{
		{name: "image entrypoint and cmd", image: image, want: []string{"/usr/local/bin/app", "--default"}},
		{name: "args replace cmd", image: image, args: []string{"--port=$(PORT)"}, want: []string{"/usr/local/bin/app", "--port=9443"}},
		{name: "command replaces entrypoint and drops cmd", image: image, command: []string{"/bin/other"},
			want: []string{"/bin/other"}},
		{name: "command and args", image: image, command: []string{"$(DIR)/run"}, args: []string{"$(UNDEFINED)", "$$(PORT)"},
			want: []string{"/etc/app/run", "$(UNDEFINED)", "$(PORT)"}},
		{name: "nothing to run", want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &corev1.Container{Command: tc.command, Args: tc.args}
			if diff := cmp.Diff(tc.want, commandLine(c, tc.image, env)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	cases := []struct {
		name      string
		pod       *corev1.PodSecurityContext
		container *corev1.SecurityContext
		imageUser string
		wantErr   string
	}{
		{name: "not asked", imageUser: ""},
		{name: "image user nonroot", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, imageUser: "65532:65532"},
		{name: "image user root by default", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, imageUser: "",
			wantErr: `container has runAsNonRoot and image will run as root (pod: "web-0_team-a(1234)", container: app)`},
		{name: "image user 0", container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}, imageUser: "0",
			wantErr: `container has runAsNonRoot and image will run as root (pod: "web-0_team-a(1234)", container: app)`},
		{name: "runAsUser overrides the image", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)}, imageUser: ""},
		{name: "runAsUser 0", container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)},
			wantErr: `container's runAsUser breaks non-root policy (pod: "web-0_team-a(1234)", container: app)`},
		{name: "non-numeric image user", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, imageUser: "nonroot",
			wantErr: `container has runAsNonRoot and image has non-numeric user (nonroot), cannot verify user is non-root (pod: "web-0_team-a(1234)", container: app)`},
		{name: "container turns it off", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}, imageUser: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.SecurityContext = tc.pod
			pod.Spec.Containers[0].SecurityContext = tc.container
			err := verifyRunAsNonRoot(pod, &pod.Spec.Containers[0], tc.imageUser)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeEnv(t *testing.T) {
	got := mergeEnv([]string{"PATH=/usr/bin", "HOME=/work", "LANG=C"},
		[]corev1.EnvVar{{Name: "HOME", Value: "/home/app"}, {Name: "EXTRA", Value: "a=b"}})
	want := []string{"PATH=/usr/bin", "HOME=/home/app", "LANG=C", "EXTRA=a=b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
