package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/karmada-quota/karmada-quota/internal/testenv/loopback"
)

// podWorker runs one pod: its goroutine owns everything about the pod's sandbox and containers, and acts on the
// latest pod object whenever it is woken (the pod changed, a process exited, a probe result changed, a Secret or
// ConfigMap of its namespace changed) or a second has passed.
type podWorker struct {
	k    *Kubelet
	uid  types.UID
	wake chan struct{}
	done chan struct{}

	mu   sync.Mutex
	pod  *corev1.Pod
	gone bool

	eventsMu   sync.Mutex
	lastEvents map[string]time.Time

	// Owned by the worker's goroutine.
	dir   string
	setUp bool
	// initDone is set once every init container has completed (a sidecar: started); it stays set.
	initDone       bool
	local          map[int32]int
	volumes        map[string]*podVolume
	initContainers []*containerState
	containers     []*containerState
	startTime      metav1.Time
	// phase is set once the pod is Succeeded or Failed: nothing runs again.
	phase           corev1.PodPhase
	reason, message string
	saKubeconfig    string
}

type podVolume struct {
	kind    volumeKind
	dir     string
	written map[string]fileProjection
}

// containerState is what the kubelet knows of one container of the pod across its runs.
type containerState struct {
	spec    corev1.Container
	init    bool
	sidecar bool
	run     *containerRun
	// exited is whether a run has ended (the container "ran once"); finished is when the last one did.
	exited       bool
	finished     time.Time
	restartCount int32
	state        corev1.ContainerState
	lastState    corev1.ContainerState
	containerID  string
	imageID      string
	crash        CrashBackoff
	pullDelay    time.Duration
	nextPull     time.Time
	retryAt      time.Time
}

func newPodWorker(k *Kubelet, pod *corev1.Pod) *podWorker {
	w := &podWorker{
		k: k, uid: pod.UID, pod: pod, wake: make(chan struct{}, 1), done: make(chan struct{}),
		lastEvents: map[string]time.Time{},
		dir:        filepath.Join(k.cfg.RootDir, "pods", string(pod.UID)),
		volumes:    map[string]*podVolume{},
		startTime:  secondsTime(time.Now()),
	}
	if pod.Status.StartTime != nil {
		w.startTime = *pod.Status.StartTime
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		// Finished before this kubelet saw it (a restart of the kubelet): nothing to run, only to delete.
		w.phase = pod.Status.Phase
	}
	previous := map[string]corev1.ContainerStatus{}
	for _, s := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		previous[s.Name] = s
	}
	add := func(c corev1.Container, init bool) *containerState {
		cs := &containerState{spec: c, init: init, sidecar: init && ptr.Deref(c.RestartPolicy, "") == corev1.ContainerRestartPolicyAlways,
			crash: ContainerBackoff()}
		cs.state.Waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
		if !init {
			cs.state.Waiting.Reason = "ContainerCreating"
		}
		if old, ok := previous[c.Name]; ok {
			cs.restartCount, cs.lastState, cs.imageID = old.RestartCount, old.LastTerminationState, old.ImageID
			if old.ContainerID != "" && w.phase == "" {
				// It ran under a previous kubelet, whose death took the process with it (parent-death signal).
				cs.restartCount++
				cs.lastState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "Unknown", Message: "the kubelet that ran it stopped", ContainerID: old.ContainerID,
				}}
			}
			if w.phase != "" {
				cs.state, cs.containerID = old.State, old.ContainerID
			}
		}
		return cs
	}
	for _, c := range pod.Spec.InitContainers {
		w.initContainers = append(w.initContainers, add(c, true))
	}
	for _, c := range pod.Spec.Containers {
		w.containers = append(w.containers, add(c, false))
	}
	return w
}

func (w *podWorker) notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *podWorker) wakeAfter(d time.Duration) { time.AfterFunc(d, w.notify) }

func (w *podWorker) setPod(pod *corev1.Pod) {
	w.mu.Lock()
	w.pod = pod
	w.mu.Unlock()
	w.notify()
}

func (w *podWorker) setGone() {
	w.mu.Lock()
	w.gone = true
	w.mu.Unlock()
	w.notify()
}

// run is the worker's loop; it returns once the pod is deleted (or gone) and its processes stopped, or the
// kubelet stops.
func (w *podWorker) run(ctx context.Context) {
	defer close(w.done)
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		if w.sync(ctx) {
			return
		}
		select {
		case <-ctx.Done():
			// The kubelet stops: its pods stop with it, briefly graceful, and stay in the API as they are.
			w.stopAll(5*time.Second, false)
			return
		case <-w.wake:
		case <-ticker.C:
		}
	}
}

func (w *podWorker) all() []*containerState {
	return append(append([]*containerState(nil), w.initContainers...), w.containers...)
}

// sync moves the pod one step and reports whether the worker is finished.
func (w *podWorker) sync(ctx context.Context) bool {
	w.mu.Lock()
	pod, gone := w.pod, w.gone
	w.mu.Unlock()
	if gone {
		// Deleted without this kubelet's help (a forced deletion): stop what runs, as the kubelet does.
		w.stopAll(gracePeriod(pod), false)
		w.cleanup()
		return true
	}
	if pod.DeletionTimestamp != nil {
		w.terminate(ctx, pod)
		return true
	}
	w.collectExits(pod)
	if w.phase == "" {
		if !w.setUp {
			w.setup(ctx, pod)
		}
		if w.setUp {
			w.refreshVolumes(ctx, pod)
			w.runContainers(ctx, pod)
		}
		if phase := w.computePhase(pod, false); phase == corev1.PodSucceeded || phase == corev1.PodFailed {
			w.phase = phase
			// Sidecars and anything else still running stop with the pod.
			w.stopAll(gracePeriod(pod), true)
			w.collectExits(pod)
		}
	}
	w.updateStatus(ctx, pod)
	return false
}

func gracePeriod(pod *corev1.Pod) time.Duration {
	grace := ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 30)
	if pod.DeletionGracePeriodSeconds != nil {
		grace = *pod.DeletionGracePeriodSeconds
	}
	return time.Duration(grace) * time.Second
}

// setup prepares the pod's sandbox: its folder, its ports and its volumes. A volume that cannot be written yet
// (a Secret that does not exist) is retried on the next sync, with a FailedMount event, as the kubelet does; a
// volume type local-kubelet cannot provide fails the pod.
func (w *podWorker) setup(ctx context.Context, pod *corev1.Pod) {
	for i := range pod.Spec.Volumes {
		if _, err := kindOf(&pod.Spec.Volumes[i]); err != nil {
			w.event(pod, "", corev1.EventTypeWarning, "FailedMount", err.Error(), false)
			w.phase, w.reason, w.message = corev1.PodFailed, "UnsupportedVolume", err.Error()
			return
		}
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		klog.ErrorS(err, "Creating the pod folder", "pod", klog.KObj(pod))
		return
	}
	if w.local == nil {
		local, err := w.allocatePorts(ctx, pod)
		if err != nil {
			klog.ErrorS(err, "Allocating the pod's ports", "pod", klog.KObj(pod))
			return
		}
		w.local = local
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if _, ok := w.volumes[v.Name]; ok {
			continue
		}
		kind, _ := kindOf(v)
		pv := &podVolume{kind: kind, dir: filepath.Join(w.dir, "volumes", v.Name)}
		if kind == volumeEmptyDir {
			// Exactly 0777, whatever the umask, as the kubelet makes it: the container's user writes there.
			if err := os.MkdirAll(pv.dir, 0o777); err != nil || os.Chmod(pv.dir, 0o777) != nil {
				return
			}
		} else if err := w.writeVolume(ctx, pod, v, pv); err != nil {
			w.event(pod, "", corev1.EventTypeWarning, "FailedMount",
				fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", v.Name, err), true)
			return
		}
		w.volumes[v.Name] = pv
	}
	w.setUp = true
}

// allocatePorts gives every declared containerPort a free local port, and records the mapping on the pod. Ports
// a previous kubelet recorded are kept.
func (w *podWorker) allocatePorts(ctx context.Context, pod *corev1.Pod) (map[int32]int, error) {
	var declared []corev1.ContainerPort
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			declared = append(declared, c.Ports...)
		}
	}
	recorded, _ := PodPorts(pod)
	local := map[int32]int{}
	byKey := map[string]int{}
	var missing []corev1.ContainerPort
	for _, p := range declared {
		if port, ok := recorded[portKey(p)]; ok {
			local[p.ContainerPort], byKey[portKey(p)] = port, port
		} else if _, ok := local[p.ContainerPort]; !ok {
			missing = append(missing, p)
		}
	}
	free, err := loopback.FreePorts(len(missing))
	if err != nil {
		return nil, err
	}
	for i, p := range missing {
		local[p.ContainerPort] = free[i]
	}
	for _, p := range declared {
		byKey[portKey(p)] = local[p.ContainerPort]
	}
	if len(declared) == 0 && recorded != nil {
		return local, nil
	}
	raw, err := json.Marshal(byKey)
	if err != nil {
		return nil, err
	}
	if pod.Annotations[PortsAnnotation] != string(raw) {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid":         pod.UID,
			"annotations": map[string]string{PortsAnnotation: string(raw)},
		}})
		if err != nil {
			return nil, err
		}
		if _, err := w.k.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("recording the pod's ports: %w", err)
		}
	}
	return local, nil
}

func (w *podWorker) writeVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, pv *podVolume) error {
	payload, err := volumePayload(pod, v, w.k.sources(ctx), w.k.capacity)
	if err != nil {
		return err
	}
	if pv.written != nil && samePayload(pv.written, payload) {
		return nil
	}
	if _, err := writeAtomically(pv.dir, payload); err != nil {
		return err
	}
	if sc := pod.Spec.SecurityContext; w.k.runtime != nil && sc != nil && sc.FSGroup != nil {
		if err := applyFSGroup(pv.dir, *sc.FSGroup); err != nil {
			return err
		}
	}
	pv.written = payload
	return nil
}

func samePayload(a, b map[string]fileProjection) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		o, ok := b[k]
		if !ok || o.Mode != v.Mode || string(o.Data) != string(v.Data) {
			return false
		}
	}
	return true
}

// refreshVolumes keeps volumes written from Secrets, ConfigMaps and tokens equal to their sources, on every sync
// (woken by a change of a Secret or ConfigMap of the namespace), swapping the content atomically.
func (w *podWorker) refreshVolumes(ctx context.Context, pod *corev1.Pod) {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		pv := w.volumes[v.Name]
		if pv == nil || pv.kind != volumeWritten {
			continue
		}
		if err := w.writeVolume(ctx, pod, v, pv); err != nil {
			w.event(pod, "", corev1.EventTypeWarning, "FailedMount",
				fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", v.Name, err), true)
		}
	}
}

// collectExits records the runs that have ended.
func (w *podWorker) collectExits(pod *corev1.Pod) {
	for _, c := range w.all() {
		if c.run == nil || !c.run.proc.done() {
			continue
		}
		c.run.prober.stop()
		term := c.run.proc.terminated()
		klog.InfoS("Container exited", "pod", klog.KObj(pod), "container", c.spec.Name, "exitCode", term.ExitCode)
		c.state = corev1.ContainerState{Terminated: term}
		c.exited, c.finished, c.run = true, c.run.proc.finished, nil
	}
}

// restarts reports whether a container that exited with code is started again.
func restarts(pod *corev1.Pod, c *containerState, code int32) bool {
	if c.sidecar {
		return true
	}
	policy := pod.Spec.RestartPolicy
	if c.spec.RestartPolicy != nil {
		policy = corev1.RestartPolicy(*c.spec.RestartPolicy)
	}
	if c.init && code != 0 {
		// A failed init container is retried unless the pod never restarts anything.
		return policy != corev1.RestartPolicyNever
	}
	switch policy {
	case corev1.RestartPolicyAlways:
		return !c.init
	case corev1.RestartPolicyOnFailure:
		return code != 0
	}
	return false
}

// runContainers starts init containers one at a time, each to completion (a sidecar only until it has started),
// then every container, and restarts what exited as the restart policy says.
func (w *podWorker) runContainers(ctx context.Context, pod *corev1.Pod) {
	if w.initDone {
		// Once the pod is initialized it stays so; only sidecars run again when they exit.
		for _, c := range w.initContainers {
			if c.sidecar && c.run == nil {
				w.start(ctx, pod, c)
			}
		}
	}
	for _, c := range w.initContainers {
		if w.initDone {
			break
		}
		switch {
		case c.sidecar:
			if c.run == nil && !w.start(ctx, pod, c) {
				return
			}
			if c.run == nil || !c.run.prober.started.Load() {
				return
			}
		case c.exited && c.state.Terminated != nil && c.state.Terminated.ExitCode == 0:
			continue
		case c.run != nil:
			return
		default:
			if c.exited && c.state.Terminated != nil && !restarts(pod, c, c.state.Terminated.ExitCode) {
				return // the pod fails: computePhase sees it
			}
			w.start(ctx, pod, c)
			return
		}
	}
	w.initDone = true
	for _, c := range w.containers {
		if c.run == nil {
			w.start(ctx, pod, c)
		}
	}
}

// start starts a container that is not running, if it should run now: a container that exited waits for its
// crash-loop back-off, one that failed to start waits for its retry, one whose image is missing for the image
// back-off. It reports whether the container runs.
func (w *podWorker) start(ctx context.Context, pod *corev1.Pod, c *containerState) bool {
	now := time.Now()
	fieldPath := fieldPathOf(c)
	if c.exited {
		last := c.state.Terminated
		if last == nil {
			last = c.lastState.Terminated
		}
		if last != nil && c.state.Terminated != nil && !restarts(pod, c, last.ExitCode) {
			return false
		}
		if wait := c.crash.Wait(c.finished, now); wait > 0 {
			if c.state.Terminated != nil {
				w.wakeAfter(wait)
				c.lastState = c.state
				msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
					c.crash.delay, c.spec.Name, pod.Name, pod.Namespace, pod.UID)
				c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: msg}}
				w.event(pod, fieldPath, corev1.EventTypeWarning, "BackOff", fmt.Sprintf(
					"Back-off restarting failed container %s in pod %s_%s(%s)", c.spec.Name, pod.Name, pod.Namespace, pod.UID), true)
			}
			return false
		}
	}
	if now.Before(c.retryAt) {
		return false
	}
	if now.Before(c.nextPull) {
		c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ImagePullBackOff", Message: fmt.Sprintf("Back-off pulling image %q", c.spec.Image),
		}}
		w.event(pod, fieldPath, corev1.EventTypeNormal, "BackOff", fmt.Sprintf("Back-off pulling image %q", c.spec.Image), true)
		return false
	}
	attempt := c.restartCount
	if c.exited {
		attempt++
	}
	run, err := w.startRun(ctx, pod, c, attempt)
	if err != nil {
		var se *startError
		if !errors.As(err, &se) {
			se = &startError{reason: "CreateContainerError", message: err.Error()}
		}
		if se.reason == "ErrImagePull" {
			c.pullDelay = min(max(2*c.pullDelay, backoffInitial), backoffMax)
			c.nextPull = now.Add(c.pullDelay)
			w.wakeAfter(c.pullDelay)
			w.event(pod, fieldPath, corev1.EventTypeWarning, "Failed", se.message, true)
		} else {
			c.retryAt = now.Add(2 * time.Second)
			w.wakeAfter(2 * time.Second)
		}
		w.event(pod, fieldPath, corev1.EventTypeWarning, "Failed", "Error: "+se.reason, true)
		if c.exited && c.state.Terminated != nil {
			c.lastState = c.state
		}
		c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: se.reason, Message: se.message}}
		return false
	}
	if c.exited {
		if c.state.Terminated != nil {
			c.lastState = c.state
		}
		c.crash.Restart(c.finished, now)
		c.restartCount++
	}
	c.pullDelay, c.nextPull = 0, time.Time{}
	c.run, c.containerID, c.imageID = run, run.proc.containerID(), run.image.Digest
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: secondsTime(run.proc.started)}}
	return true
}

func fieldPathOf(c *containerState) string {
	if c.init {
		return fmt.Sprintf("spec.initContainers{%s}", c.spec.Name)
	}
	return fmt.Sprintf("spec.containers{%s}", c.spec.Name)
}

// startRun does what the kubelet does to start a container: find the image, check the security context, compute
// the environment, the command line and the mounts, then start it, as a local process (startProcess) or through
// the container runtime (startContainer), run its postStart hook and start its probes.
func (w *podWorker) startRun(ctx context.Context, pod *corev1.Pod, c *containerState, attempt int32) (*containerRun, error) {
	fieldPath := fieldPathOf(c)
	img, err := w.k.images.resolve(c.spec.Image)
	if err != nil {
		return nil, &startError{reason: "ErrImagePull", message: fmt.Sprintf("Failed to pull image %q: %v", c.spec.Image, err)}
	}
	w.event(pod, fieldPath, corev1.EventTypeNormal, "Pulled",
		fmt.Sprintf("Container image %q already present on machine", c.spec.Image), true)
	if err := verifyRunAsNonRoot(pod, &c.spec, img.user()); err != nil {
		return nil, configError("%v", err)
	}
	env, err := resolveEnv(pod, &c.spec, w.k.sources(ctx), w.k.capacity, w.k.serviceEnv)
	if err != nil {
		return nil, configError("%v", err)
	}
	argv := commandLine(&c.spec, img.Config, envMap(env))
	if len(argv) == 0 {
		return nil, createError("no command specified")
	}
	mounts, err := w.mounts(&c.spec, envMap(env), attempt)
	if err != nil {
		return nil, err
	}
	logPath := ContainerLogPath(w.k.cfg.LogDir, pod.Namespace, pod.Name, pod.UID, c.spec.Name, attempt)
	var run *containerRun
	if w.k.runtime != nil {
		run, err = w.startContainer(ctx, pod, c, img, env, argv, mounts, attempt, logPath)
	} else {
		run, err = w.startProcess(pod, c, img, env, argv, mounts, logPath)
	}
	if err != nil {
		return nil, err
	}
	proc := run.proc
	if hook := c.spec.Lifecycle; hook != nil && hook.PostStart != nil {
		// As the kubelet: the container counts as started once its postStart hook has run; a failed hook kills it.
		hookCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := run.runHook(hookCtx, hook.PostStart, &c.spec, w.local)
		cancel()
		if err != nil {
			msg := fmt.Sprintf("PostStartHook failed: %v", err)
			w.event(pod, fieldPath, corev1.EventTypeWarning, "FailedPostStartHook", msg, false)
			proc.stop(gracePeriod(pod))
			return nil, &startError{reason: "PostStartHookError", message: msg}
		}
	}
	go func() {
		// The worker acts on an exit at once rather than at its next tick.
		<-proc.exited
		w.notify()
	}()
	w.event(pod, fieldPath, corev1.EventTypeNormal, "Created", "Created container: "+c.spec.Name, false)
	w.event(pod, fieldPath, corev1.EventTypeNormal, "Started", "Started container "+c.spec.Name, false)
	spec := c.spec
	run.prober = startProbes(probeTarget{
		container: &spec, local: w.local, startedAt: proc.started, exec: run.execIn,
		onResult: func(kind probeKind, success bool, output string, thresholdReached bool) {
			w.probed(pod, &spec, run, kind, success, output, thresholdReached)
		},
	})
	return run, nil
}

// startProcess starts a container as a local process: its mount paths and listen addresses translated to local
// folders and ports, the program taken out of the image.
func (w *podWorker) startProcess(pod *corev1.Pod, c *containerState, img *image, env []corev1.EnvVar, argv []string, mounts map[string]string, logPath string) (*containerRun, error) {
	paths := newPathTranslator(mounts)
	translated := make([]string, len(argv))
	for i, a := range argv {
		translated[i] = paths.translate(a)
		if i > 0 {
			translated[i] = rewriteListenAddress(translated[i], w.local)
		}
	}

	imageWorkDir := c.spec.WorkingDir
	if imageWorkDir == "" {
		imageWorkDir = img.Config.WorkingDir
	}
	if imageWorkDir == "" {
		imageWorkDir = "/"
	}
	workDir := paths.translate(imageWorkDir)
	if workDir == imageWorkDir {
		// Not a volume: the process gets a folder of its own rather than the machine's.
		workDir = filepath.Join(w.dir, "containers", c.spec.Name)
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, createError("%v", err)
	}

	base := []string{"PATH=" + defaultPath, "HOSTNAME=" + pod.Name, "HOME=" + workDir}
	for i := range env {
		env[i].Value = paths.translate(env[i].Value)
	}
	finalEnv := mergeEnv(append(base, img.Config.Env...), env)
	if dir, ok := mounts[serviceAccountMountPath]; ok {
		if _, set := envMap(c.spec.Env)["KUBECONFIG"]; !set {
			kubeconfig, err := w.serviceAccountKubeconfig(pod, dir)
			if err != nil {
				return nil, createError("%v", err)
			}
			finalEnv = mergeEnv(finalEnv, []corev1.EnvVar{{Name: "KUBECONFIG", Value: kubeconfig}})
		}
	}

	exe := translated[0]
	if exe == argv[0] {
		pathEnv, _ := lookupEnv(finalEnv, "PATH")
		var err error
		if exe, err = img.executable(argv[0], imageWorkDir, pathEnv); err != nil {
			return nil, createError("failed to start container %q: %v", c.spec.Name, err)
		}
	}
	translated[0] = argv[0]
	proc, err := startProcess(exe, translated, finalEnv, workDir, logPath)
	if err != nil {
		return nil, createError("failed to start container %q: %v", c.spec.Name, err)
	}
	klog.InfoS("Started container", "pod", klog.KObj(pod), "container", c.spec.Name, "pid", proc.pid, "argv", translated)
	return &containerRun{proc: proc, image: img, env: finalEnv, workDir: workDir, imageWorkDir: imageWorkDir, paths: paths}, nil
}

// probed acts on a probe result: events for failures, and a liveness or startup failure kills the container,
// which is then restarted as its restart policy says.
func (w *podWorker) probed(pod *corev1.Pod, c *corev1.Container, run *containerRun, kind probeKind, success bool, output string, thresholdReached bool) {
	fieldPath := fmt.Sprintf("spec.containers{%s}", c.Name)
	if !success {
		w.event(pod, fieldPath, corev1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe failed: %s", kind, output), true)
		if thresholdReached && kind != readinessProbe {
			w.event(pod, fieldPath, corev1.EventTypeNormal, "Killing",
				fmt.Sprintf("Container %s failed %s probe, will be restarted", c.Name, strings.ToLower(string(kind))), false)
			grace := gracePeriod(pod)
			probe := c.LivenessProbe
			if kind == startupProbe {
				probe = c.StartupProbe
			}
			if probe != nil && probe.TerminationGracePeriodSeconds != nil {
				grace = time.Duration(*probe.TerminationGracePeriodSeconds) * time.Second
			}
			go func() {
				run.proc.stop(grace)
				w.notify()
			}()
		}
	}
	w.notify()
}

// stopAll stops every running container, giving each the grace period.
func (w *podWorker) stopAll(grace time.Duration, events bool) {
	var wg sync.WaitGroup
	w.mu.Lock()
	pod := w.pod
	w.mu.Unlock()
	for _, c := range w.all() {
		if c.run == nil {
			continue
		}
		run, spec := c.run, c.spec
		run.prober.stop()
		if events {
			w.event(pod, fieldPathOf(c), corev1.EventTypeNormal, "Killing", "Stopping container "+c.spec.Name, false)
		}
		wg.Go(func() {
			remaining := grace
			if spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil {
				// The preStop hook runs within the grace period; the kubelet leaves the process at least 2 s after it.
				start := time.Now()
				hookCtx, cancel := context.WithTimeout(context.Background(), grace)
				if err := run.runHook(hookCtx, spec.Lifecycle.PreStop, &spec, w.local); err != nil && events {
					w.event(pod, fieldPathOf(c), corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed: "+err.Error(), false)
				}
				cancel()
				remaining = max(grace-time.Since(start), 2*time.Second)
			}
			run.proc.stop(remaining)
		})
	}
	wg.Wait()
}

// terminate handles a deletion as the kubelet does: stop the containers within the grace period, report the
// pod's final status, then delete the object for good (grace 0, on the condition that it is still this pod).
func (w *podWorker) terminate(ctx context.Context, pod *corev1.Pod) {
	w.stopAll(gracePeriod(pod), true)
	w.collectExits(pod)
	if w.phase == "" {
		w.phase = w.computePhase(pod, true)
	}
	w.updateStatus(ctx, pod)
	err := w.k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		klog.ErrorS(err, "Deleting a terminated pod", "pod", klog.KObj(pod))
	}
	w.cleanup()
}

// cleanup removes the pod's sandbox; its logs stay.
func (w *podWorker) cleanup() {
	_ = os.RemoveAll(w.dir)
	w.k.tokens.forget(w.uid)
	w.k.forget(w.uid)
}

// initialized reports whether every init container has completed (a sidecar: started), and lists those that
// have not.
func (w *podWorker) initialized() (bool, []string) {
	if w.initDone {
		return true, nil
	}
	var incomplete []string
	for _, c := range w.initContainers {
		switch {
		case c.sidecar && c.run != nil && c.run.prober.started.Load():
		case !c.sidecar && c.exited && c.state.Terminated != nil && c.state.Terminated.ExitCode == 0:
		default:
			incomplete = append(incomplete, c.spec.Name)
		}
	}
	return len(incomplete) == 0, incomplete
}

// computePhase is the kubelet's getPhase. terminating is true once the pod is being deleted and nothing runs.
func (w *podWorker) computePhase(pod *corev1.Pod, terminating bool) corev1.PodPhase {
	if w.phase != "" {
		return w.phase
	}
	if ok, _ := w.initialized(); !ok && !terminating {
		for _, c := range w.initContainers {
			if !c.sidecar && c.run == nil && c.exited && c.state.Terminated != nil && c.state.Terminated.ExitCode != 0 &&
				!restarts(pod, c, c.state.Terminated.ExitCode) {
				return corev1.PodFailed
			}
		}
		return corev1.PodPending
	}
	waiting, running, stopped, succeeded := 0, 0, 0, 0
	for _, c := range w.containers {
		switch {
		case c.run != nil:
			running++
		case c.state.Terminated != nil:
			stopped++
			if c.state.Terminated.ExitCode == 0 {
				succeeded++
			}
		case c.lastState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case terminating:
		if stopped == succeeded && waiting == 0 {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		switch {
		case pod.Spec.RestartPolicy == corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

func (w *podWorker) containerStatus(c *containerState) corev1.ContainerStatus {
	started := c.run != nil && c.run.prober.started.Load()
	return corev1.ContainerStatus{
		Name:                 c.spec.Name,
		State:                c.state,
		LastTerminationState: c.lastState,
		Ready:                started && c.run.prober.ready.Load(),
		RestartCount:         c.restartCount,
		Image:                c.spec.Image,
		ImageID:              c.imageID,
		ContainerID:          c.containerID,
		Started:              ptr.To(started),
	}
}

// status computes the pod status the kubelet owns, keeping what others own (PodScheduled, DisruptionTarget and
// any other condition, nominatedNodeName, qosClass).
func (w *podWorker) status(pod *corev1.Pod) corev1.PodStatus {
	s := *pod.Status.DeepCopy()
	phase := w.computePhase(pod, false)
	s.Phase = phase
	s.Reason, s.Message = w.reason, w.message
	s.StartTime = &w.startTime
	s.HostIP, s.HostIPs = podIP, []corev1.HostIP{{IP: podIP}}
	if w.setUp {
		s.PodIP, s.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
	}
	terminal := phase == corev1.PodSucceeded || phase == corev1.PodFailed
	status := func(c *containerState) corev1.ContainerStatus {
		cs := w.containerStatus(c)
		if terminal && cs.State.Waiting != nil {
			// A container that will never run again is not waiting: the kubelet reports it terminated, here with
			// the reason the pod failed when that is what kept it from starting.
			reason, message := "ContainerStatusUnknown", "The container could not be located when the pod was terminated"
			if w.reason != "" {
				reason, message = w.reason, w.message
			}
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: reason, Message: message}}
		}
		return cs
	}
	s.InitContainerStatuses, s.ContainerStatuses = nil, nil
	for _, c := range w.initContainers {
		s.InitContainerStatuses = append(s.InitContainerStatuses, status(c))
	}
	var unready []string
	for _, c := range w.containers {
		cs := status(c)
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
		if !cs.Ready {
			unready = append(unready, c.spec.Name)
		}
	}
	for i, c := range w.initContainers {
		if c.sidecar && !s.InitContainerStatuses[i].Ready {
			unready = append(unready, c.spec.Name)
		}
	}

	initialized, incomplete := w.initialized()
	setCondition(&s, corev1.PodReadyToStartContainers, w.setUp && !terminal, "", "")
	if initialized || terminal && len(w.initContainers) == 0 {
		setCondition(&s, corev1.PodInitialized, true, "", "")
	} else {
		setCondition(&s, corev1.PodInitialized, false, "ContainersNotInitialized",
			fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")))
	}
	switch {
	case terminal:
		setCondition(&s, corev1.ContainersReady, false, "PodCompleted", "")
		setCondition(&s, corev1.PodReady, false, "PodCompleted", "")
	case len(unready) > 0:
		msg := fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
		setCondition(&s, corev1.ContainersReady, false, "ContainersNotReady", msg)
		setCondition(&s, corev1.PodReady, false, "ContainersNotReady", msg)
	default:
		setCondition(&s, corev1.ContainersReady, true, "", "")
		if msg := readinessGatesUnready(pod); msg != "" {
			setCondition(&s, corev1.PodReady, false, "ReadinessGatesNotReady", msg)
		} else {
			setCondition(&s, corev1.PodReady, true, "", "")
		}
	}
	return s
}

func readinessGatesUnready(pod *corev1.Pod) string {
	for _, gate := range pod.Spec.ReadinessGates {
		found := false
		for _, c := range pod.Status.Conditions {
			if c.Type == gate.ConditionType {
				found = true
				if c.Status != corev1.ConditionTrue {
					return fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", gate.ConditionType, c.Status)
				}
			}
		}
		if !found {
			return fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", gate.ConditionType)
		}
	}
	return ""
}

// setCondition sets a condition, keeping its lastTransitionTime while its status does not change.
func setCondition(s *corev1.PodStatus, t corev1.PodConditionType, status bool, reason, message string) {
	c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message}
	if status {
		c.Status = corev1.ConditionTrue
	}
	for i, old := range s.Conditions {
		if old.Type != t {
			continue
		}
		c.LastTransitionTime = old.LastTransitionTime
		c.ObservedGeneration = old.ObservedGeneration
		if old.Status != c.Status {
			c.LastTransitionTime = secondsTime(time.Now())
		}
		s.Conditions[i] = c
		return
	}
	c.LastTransitionTime = secondsTime(time.Now())
	s.Conditions = append(s.Conditions, c)
}

// updateStatus writes the pod status when it changed. A conflict (the object changed meanwhile) is retried
// with the newer object the informer brings.
func (w *podWorker) updateStatus(ctx context.Context, pod *corev1.Pod) {
	status := w.status(pod)
	if apiequality.Semantic.DeepEqual(status, pod.Status) {
		return
	}
	updated := pod.DeepCopy()
	updated.Status = status
	result, err := w.k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	switch {
	case err == nil:
		w.mu.Lock()
		if w.pod.ResourceVersion == pod.ResourceVersion {
			w.pod = result
		}
		w.mu.Unlock()
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		w.wakeAfter(100 * time.Millisecond)
	default:
		if ctx.Err() == nil {
			klog.ErrorS(err, "Updating the pod status", "pod", klog.KObj(pod))
		}
		w.wakeAfter(time.Second)
	}
}

// event records an event on the pod; repeated ones (dedupe) at most every 30 s.
func (w *podWorker) event(pod *corev1.Pod, fieldPath, eventType, reason, message string, dedupe bool) {
	if dedupe {
		key := fieldPath + "|" + reason + "|" + message
		w.eventsMu.Lock()
		last, seen := w.lastEvents[key]
		if seen && time.Since(last) < 30*time.Second {
			w.eventsMu.Unlock()
			return
		}
		w.lastEvents[key] = time.Now()
		w.eventsMu.Unlock()
	}
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, FieldPath: fieldPath,
	}
	w.k.recorder.Event(ref, eventType, reason, message)
}

// secondsTime is a time as the API stores it, to the second, so a status read back compares equal.
func secondsTime(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }
