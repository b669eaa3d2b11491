package kubelet

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestPodmanFlagsFollowTheSecurityContext(t *testing.T) {
	restricted := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	cases := []struct {
		name      string
		pod       *corev1.PodSecurityContext
		container *corev1.SecurityContext
		want      []string
		wantErr   string
	}{
		{
			name: "the charts' pods: the pod's user, group and fsGroup, the container's restrictions",
			pod: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			container: restricted,
			want: []string{"--user 65532:65532", "--group-add 65532", "--cap-drop ALL", "--security-opt no-new-privileges",
				"--read-only --read-only-tmpfs=false"},
		},
		{
			name:      "the container's user wins over the pod's",
			pod:       &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
			container: &corev1.SecurityContext{RunAsUser: ptr.To[int64](2000)},
			want:      []string{"--user 2000", "--security-opt seccomp=unconfined"},
		},
		{
			name:      "no seccomp profile runs without one, as the kubelet's default",
			container: &corev1.SecurityContext{Privileged: ptr.To(true), Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}},
			want:      []string{"--privileged", "--cap-add NET_ADMIN", "--security-opt seccomp=unconfined"},
		},
		{
			name:    "a group without a user is refused, not run as root's group",
			pod:     &corev1.PodSecurityContext{RunAsGroup: ptr.To[int64](3000)},
			wantErr: "runAsGroup without runAsUser",
		},
		{
			name:      "a Localhost profile is refused, not run without one",
			container: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}},
			wantErr:   "seccomp profile type Localhost",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.PodSpec{SecurityContext: tc.pod}
			c := &corev1.Container{Name: "c", SecurityContext: tc.container}
			flags, err := SecurityOf(pod, c).podmanFlags()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got flags %v, error %v; want an error saying %q", flags, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(flags, " ")
			for _, w := range tc.want {
				if !strings.Contains(joined, w) {
					t.Errorf("flags %q lack %q", joined, w)
				}
			}
			if slices.Contains(flags, "seccomp=unconfined") && tc.pod != nil && tc.pod.SeccompProfile != nil {
				t.Errorf("flags %q drop the RuntimeDefault profile", joined)
			}
		})
	}
}

func TestSecurityOfMergesContainerOverPod(t *testing.T) {
	pod := &corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{
		RunAsUser: ptr.To[int64](1), RunAsGroup: ptr.To[int64](2), SupplementalGroups: []int64{5}, FSGroup: ptr.To[int64](6),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}}
	c := &corev1.Container{SecurityContext: &corev1.SecurityContext{RunAsGroup: ptr.To[int64](3),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}
	s := SecurityOf(pod, c)
	if *s.User != 1 || *s.Group != 3 || !slices.Equal(s.SupplementalGroups, []int64{5, 6}) || s.Seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("got user %d group %d groups %v seccomp %v", *s.User, *s.Group, s.SupplementalGroups, s.Seccomp)
	}
	if !s.DropsAll() {
		t.Error("a container dropping ALL keeps no capability")
	}
	c.SecurityContext.Capabilities.Add = []corev1.Capability{"CHOWN"}
	if SecurityOf(pod, c).DropsAll() {
		t.Error("a container adding CHOWN back keeps a capability")
	}
}
