package kubelet

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Security is a container's effective security context: the container's settings over the pod's, as the kubelet
// hands them to a CRI runtime.
type Security struct {
	User, Group            *int64
	SupplementalGroups     []int64
	Privileged             bool
	Capabilities           *corev1.Capabilities
	NoNewPrivileges        bool
	ReadOnlyRootFilesystem bool
	Seccomp                *corev1.SeccompProfile
}

// SecurityOf is container c's effective security context in pod.
func SecurityOf(pod *corev1.PodSpec, c *corev1.Container) Security {
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	s := Security{
		User: sc.RunAsUser, Group: sc.RunAsGroup, Privileged: ptr.Deref(sc.Privileged, false), Capabilities: sc.Capabilities,
		NoNewPrivileges:        sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		ReadOnlyRootFilesystem: ptr.Deref(sc.ReadOnlyRootFilesystem, false), Seccomp: sc.SeccompProfile,
	}
	if s.User == nil {
		s.User = psc.RunAsUser
	}
	if s.Group == nil {
		s.Group = psc.RunAsGroup
	}
	s.SupplementalGroups = append(s.SupplementalGroups, psc.SupplementalGroups...)
	if psc.FSGroup != nil {
		s.SupplementalGroups = append(s.SupplementalGroups, *psc.FSGroup)
	}
	if s.Seccomp == nil {
		s.Seccomp = psc.SeccompProfile
	}
	return s
}

// DropsAll reports whether the container keeps no capability.
func (s Security) DropsAll() bool {
	return s.Capabilities != nil && len(s.Capabilities.Add) == 0 && slices.Contains(s.Capabilities.Drop, "ALL") && !s.Privileged
}

// podmanFlags are the `podman run` flags that run a container under s. What podman cannot express as Kubernetes
// means is refused, rather than run the container under weaker settings.
func (s Security) podmanFlags() ([]string, error) {
	var flags []string
	switch {
	case s.User != nil && s.Group != nil:
		flags = append(flags, "--user", fmt.Sprintf("%d:%d", *s.User, *s.Group))
	case s.User != nil:
		flags = append(flags, "--user", strconv.FormatInt(*s.User, 10))
	case s.Group != nil:
		return nil, fmt.Errorf("runAsGroup without runAsUser is not supported by local-kubelet's container runtime")
	}
	for _, g := range s.SupplementalGroups {
		flags = append(flags, "--group-add", strconv.FormatInt(g, 10))
	}
	if s.Privileged {
		flags = append(flags, "--privileged")
	}
	if s.Capabilities != nil {
		for _, drop := range s.Capabilities.Drop {
			flags = append(flags, "--cap-drop", string(drop))
		}
		for _, add := range s.Capabilities.Add {
			flags = append(flags, "--cap-add", string(add))
		}
	}
	if s.NoNewPrivileges {
		flags = append(flags, "--security-opt", "no-new-privileges")
	}
	if s.ReadOnlyRootFilesystem {
		// podman's --read-only alone mounts writable tmpfs on /tmp, /run and /var/tmp; Kubernetes mounts none.
		flags = append(flags, "--read-only", "--read-only-tmpfs=false")
	}
	switch {
	case s.Seccomp == nil, s.Seccomp.Type == corev1.SeccompProfileTypeUnconfined:
		// The kubelet's default (--seccomp-default off) is no profile.
		flags = append(flags, "--security-opt", "seccomp=unconfined")
	case s.Seccomp.Type == corev1.SeccompProfileTypeRuntimeDefault:
		// podman applies its default profile, as a CRI runtime applies its own.
	default:
		return nil, fmt.Errorf("seccomp profile type %s is not supported by local-kubelet's container runtime", s.Seccomp.Type)
	}
	return flags, nil
}
