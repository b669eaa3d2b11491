package kubelet

import (
	"errors"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// volumeSources is what volumes are built from: Secrets and ConfigMaps, and service account tokens.
type volumeSources interface {
	objectGetter
	// serviceAccountToken returns a token of the pod's service account for a projected volume source.
	serviceAccountToken(pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) ([]byte, error)
}

// errUnsupportedVolume marks a volume type local-kubelet cannot provide; the pod fails instead of waiting forever.
var errUnsupportedVolume = errors.New("unsupported volume type")

const defaultFileMode int32 = 0o644

// volumeKind tells how a volume is provided: written from API objects by the atomic writer, or an empty folder.
type volumeKind int

const (
	volumeWritten volumeKind = iota
	volumeEmptyDir
)

func kindOf(v *corev1.Volume) (volumeKind, error) {
	switch {
	case v.Secret != nil, v.ConfigMap != nil, v.Projected != nil, v.DownwardAPI != nil:
		return volumeWritten, nil
	case v.EmptyDir != nil:
		return volumeEmptyDir, nil
	}
	return 0, fmt.Errorf("%w: volume %q is neither secret, configMap, projected, downwardAPI nor emptyDir, "+
		"the types local-kubelet can provide without a container runtime", errUnsupportedVolume, v.Name)
}

// volumePayload computes the files of a volume written from API objects, as the kubelet's secret, configMap,
// downwardAPI and projected volume plugins do.
func volumePayload(pod *corev1.Pod, v *corev1.Volume, src volumeSources, allocatable corev1.ResourceList) (map[string]fileProjection, error) {
	switch {
	case v.Secret != nil:
		mode := modeOr(v.Secret.DefaultMode)
		optional := isTrue(v.Secret.Optional)
		s, err := src.secret(pod.Namespace, v.Secret.SecretName)
		if err != nil {
			if !apierrors.IsNotFound(err) || !optional {
				return nil, err
			}
			s = &corev1.Secret{}
		}
		return secretPayload(s, v.Secret.Items, mode, optional)
	case v.ConfigMap != nil:
		mode := modeOr(v.ConfigMap.DefaultMode)
		optional := isTrue(v.ConfigMap.Optional)
		cm, err := src.configMap(pod.Namespace, v.ConfigMap.Name)
		if err != nil {
			if !apierrors.IsNotFound(err) || !optional {
				return nil, err
			}
			cm = &corev1.ConfigMap{}
		}
		return configMapPayload(cm, v.ConfigMap.Items, mode, optional)
	case v.DownwardAPI != nil:
		return downwardAPIPayload(pod, v.DownwardAPI.Items, modeOr(v.DownwardAPI.DefaultMode), allocatable)
	case v.Projected != nil:
		return projectedPayload(pod, v.Projected, src, allocatable)
	}
	_, err := kindOf(v)
	return nil, err
}

func modeOr(mode *int32) int32 {
	if mode == nil {
		return defaultFileMode
	}
	return *mode
}

func secretPayload(s *corev1.Secret, items []corev1.KeyToPath, mode int32, optional bool) (map[string]fileProjection, error) {
	payload := map[string]fileProjection{}
	if len(items) == 0 {
		for k, v := range s.Data {
			payload[k] = fileProjection{Data: v, Mode: mode}
		}
		return payload, nil
	}
	for _, item := range items {
		v, ok := s.Data[item.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("references non-existent secret key: %s", item.Key)
		}
		payload[item.Path] = fileProjection{Data: v, Mode: itemMode(item.Mode, mode)}
	}
	return payload, nil
}

func configMapPayload(cm *corev1.ConfigMap, items []corev1.KeyToPath, mode int32, optional bool) (map[string]fileProjection, error) {
	payload := map[string]fileProjection{}
	if len(items) == 0 {
		for k, v := range cm.Data {
			payload[k] = fileProjection{Data: []byte(v), Mode: mode}
		}
		for k, v := range cm.BinaryData {
			payload[k] = fileProjection{Data: v, Mode: mode}
		}
		return payload, nil
	}
	for _, item := range items {
		var data []byte
		if v, ok := cm.Data[item.Key]; ok {
			data = []byte(v)
		} else if v, ok := cm.BinaryData[item.Key]; ok {
			data = v
		} else {
			if optional {
				continue
			}
			return nil, fmt.Errorf("configmap references non-existent config key: %s", item.Key)
		}
		payload[item.Path] = fileProjection{Data: data, Mode: itemMode(item.Mode, mode)}
	}
	return payload, nil
}

func itemMode(mode *int32, defaultMode int32) int32 {
	if mode != nil {
		return *mode
	}
	return defaultMode
}

func downwardAPIPayload(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, mode int32, allocatable corev1.ResourceList) (map[string]fileProjection, error) {
	payload := map[string]fileProjection{}
	var errs []error
	for _, item := range items {
		var value string
		var err error
		switch {
		case item.FieldRef != nil:
			value, err = podFieldValue(pod, item.FieldRef.FieldPath)
		case item.ResourceFieldRef != nil:
			value, err = resourceFieldValue(pod, "", item.ResourceFieldRef, allocatable)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		payload[filepath.Clean(item.Path)] = fileProjection{Data: []byte(value), Mode: itemMode(item.Mode, mode)}
	}
	return payload, errors.Join(errs...)
}

func projectedPayload(pod *corev1.Pod, p *corev1.ProjectedVolumeSource, src volumeSources, allocatable corev1.ResourceList) (map[string]fileProjection, error) {
	mode := modeOr(p.DefaultMode)
	payload := map[string]fileProjection{}
	var errs []error
	add := func(files map[string]fileProjection, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		for k, v := range files {
			payload[k] = v
		}
	}
	for _, source := range p.Sources {
		switch {
		case source.Secret != nil:
			optional := isTrue(source.Secret.Optional)
			s, err := src.secret(pod.Namespace, source.Secret.Name)
			if err != nil {
				if !apierrors.IsNotFound(err) || !optional {
					errs = append(errs, err)
					continue
				}
				s = &corev1.Secret{}
			}
			add(secretPayload(s, source.Secret.Items, mode, optional))
		case source.ConfigMap != nil:
			optional := isTrue(source.ConfigMap.Optional)
			cm, err := src.configMap(pod.Namespace, source.ConfigMap.Name)
			if err != nil {
				if !apierrors.IsNotFound(err) || !optional {
					errs = append(errs, err)
					continue
				}
				cm = &corev1.ConfigMap{}
			}
			add(configMapPayload(cm, source.ConfigMap.Items, mode, optional))
		case source.DownwardAPI != nil:
			add(downwardAPIPayload(pod, source.DownwardAPI.Items, mode, allocatable))
		case source.ServiceAccountToken != nil:
			token, err := src.serviceAccountToken(pod, source.ServiceAccountToken)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			payload[source.ServiceAccountToken.Path] = fileProjection{Data: token, Mode: mode}
		default:
			errs = append(errs, fmt.Errorf("%w: projected volume source other than secret, configMap, downwardAPI or "+
				"serviceAccountToken", errUnsupportedVolume))
		}
	}
	return payload, errors.Join(errs...)
}
