package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

// shellImage is an image holding the machine's shell (its content, taken into the image), for pods whose
// containers exit as a test wants them to.
func shellImage(t *testing.T, dir string) string {
	t.Helper()
	sh, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatalf("reading /bin/sh to put in a test image: %v", err)
	}
	const ref = "example.test/shell:v1"
	if err := WriteImage(filepath.Join(dir, "shell.tar"), ref, v1.Config{Entrypoint: []string{"/bin/sh", "-c"}},
		ImageFile{Path: "/bin/sh", Data: sh, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	return ref
}

func shellContainer(name, image, script string) corev1.Container {
	return corev1.Container{Name: name, Image: image, Args: []string{script}}
}

// TestPodLifecycle runs pods through a pod worker against a fake API: phases, container states, init
// containers and restarts, as the kubelet reports them.
func TestPodLifecycle(t *testing.T) {
	images := t.TempDir()
	image := shellImage(t, images)
	type containerWant struct {
		Name         string
		Reason       string // the reason of the terminated or waiting state, "Running" when running
		ExitCode     int32
		RestartCount int32
	}
	cases := []struct {
		name     string
		policy   corev1.RestartPolicy
		init     []corev1.Container
		main     []corev1.Container
		until    func(*corev1.Pod) bool
		phase    corev1.PodPhase
		wantInit []containerWant
		want     []containerWant
	}{
		{
			name: "a job that succeeds", policy: corev1.RestartPolicyNever,
			main:  []corev1.Container{shellContainer("main", image, "exit 0")},
			phase: corev1.PodSucceeded,
			want:  []containerWant{{Name: "main", Reason: "Completed"}},
		},
		{
			name: "a job that fails", policy: corev1.RestartPolicyNever,
			main:  []corev1.Container{shellContainer("main", image, "exit 3"), shellContainer("other", image, "exit 0")},
			phase: corev1.PodFailed,
			want:  []containerWant{{Name: "main", Reason: "Error", ExitCode: 3}, {Name: "other", Reason: "Completed"}},
		},
		{
			name: "init containers run in order, to completion, before the containers", policy: corev1.RestartPolicyOnFailure,
			// The order is written to an emptyDir mounted at /shared: the path in the script is translated.
			init: []corev1.Container{
				shellContainer("first", image, "echo first > /shared/order"),
				shellContainer("second", image, "echo second >> /shared/order"),
			},
			main:     []corev1.Container{shellContainer("main", image, `test "$(cat /shared/order)" = "$(printf 'first\nsecond')"`)},
			phase:    corev1.PodSucceeded,
			wantInit: []containerWant{{Name: "first", Reason: "Completed"}, {Name: "second", Reason: "Completed"}},
			want:     []containerWant{{Name: "main", Reason: "Completed"}},
		},
		{
			name: "a failed init container fails a pod that never restarts", policy: corev1.RestartPolicyNever,
			init:     []corev1.Container{shellContainer("init", image, "exit 1")},
			main:     []corev1.Container{shellContainer("main", image, "exit 0")},
			phase:    corev1.PodFailed,
			wantInit: []containerWant{{Name: "init", Reason: "Error", ExitCode: 1}},
			want:     []containerWant{{Name: "main", Reason: "ContainerStatusUnknown", ExitCode: 137}},
		},
		{
			name: "a crashing container restarts at once, then backs off", policy: corev1.RestartPolicyAlways,
			main: []corev1.Container{shellContainer("main", image, "exit 2")},
			until: func(p *corev1.Pod) bool {
				s := p.Status.ContainerStatuses
				return len(s) == 1 && s[0].State.Waiting != nil && s[0].State.Waiting.Reason == "CrashLoopBackOff"
			},
			phase: corev1.PodRunning,
			want:  []containerWant{{Name: "main", Reason: "CrashLoopBackOff", RestartCount: 1}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, list := range [][]corev1.Container{tc.init, tc.main} {
				for i := range list {
					list[i].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
				}
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid-1"},
				Spec: corev1.PodSpec{
					NodeName: "node", RestartPolicy: tc.policy, InitContainers: tc.init, Containers: tc.main,
					Volumes: []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			}
			client := fake.NewClientset(pod)
			root := t.TempDir()
			k, err := New(Config{NodeName: "node", RootDir: root, ImageDirs: []string{images}, ProxyAddress: "127.0.0.1:0",
				APIServerURL: "https://127.0.0.1:6443"}, client)
			if err != nil {
				t.Fatal(err)
			}
			k.recorder = record.NewFakeRecorder(1000)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			k.ctx = ctx
			w := newPodWorker(k, pod)
			go w.run(ctx)
			defer func() {
				cancel()
				<-w.done
			}()
			until := tc.until
			if until == nil {
				until = func(p *corev1.Pod) bool { return p.Status.Phase == tc.phase }
			}
			var got *corev1.Pod
			deadline := time.Now().Add(10 * time.Second)
			for {
				got, err = client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				w.setPod(got)
				if until(got) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("never reached the expected state; status:\n%s", dumpStatus(got))
				}
				time.Sleep(50 * time.Millisecond)
			}
			if got.Status.Phase != tc.phase {
				t.Errorf("phase %s, want %s", got.Status.Phase, tc.phase)
			}
			summarize := func(statuses []corev1.ContainerStatus) []containerWant {
				var out []containerWant
				for _, s := range statuses {
					cw := containerWant{Name: s.Name, RestartCount: s.RestartCount}
					switch {
					case s.State.Terminated != nil:
						cw.Reason, cw.ExitCode = s.State.Terminated.Reason, s.State.Terminated.ExitCode
					case s.State.Waiting != nil:
						cw.Reason = s.State.Waiting.Reason
					case s.State.Running != nil:
						cw.Reason = "Running"
					}
					out = append(out, cw)
				}
				return out
			}
			if diff := cmp.Diff(tc.wantInit, summarize(got.Status.InitContainerStatuses)); diff != "" {
				t.Errorf("init containers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, summarize(got.Status.ContainerStatuses)); diff != "" {
				t.Errorf("containers (-want +got):\n%s", diff)
			}
		})
	}
}

func dumpStatus(p *corev1.Pod) string {
	out := string(p.Status.Phase) + "\n"
	for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		out += s.Name + ": " + s.State.String() + "\n"
	}
	return out
}
