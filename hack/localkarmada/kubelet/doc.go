// Package kubelet is local-kubelet: the kubelet of one node whose pods run as local processes, for a test
// cluster on a machine without containers, or as containers under rootful podman where it is installed
// (Config.Runtime; see "Under a container runtime" below). The local environment (hack/localkarmada) makes it the only node of
// its host cluster, so karmada-quota's webhook and controller run there from the pod specs its chart renders:
// their command, args, env and mounted Secrets, as in production.
//
// # What it does as a kubelet does
//
//   - Registers its Node (capacity, hostname label, address 127.0.0.1), keeps it Ready and renews its Lease.
//   - Runs the pods bound to it: init containers in order, each to completion (a sidecar, restartPolicy Always,
//     until it has started), then the containers. Each container is a process in its own process group, started
//     with a parent-death signal so nothing outlives the kubelet; its output goes to
//     <log dir>/<namespace>_<pod>_<uid>/<container>/<restart count>.log (ContainerLogPath).
//   - Images are docker-archive tarballs (what `docker save` and `make images` write) in the image folders, found by
//     their RepoTags after Docker's defaults are made explicit (busybox is docker.io/library/busybox:latest), or by
//     digest. A missing image is ErrImagePull then ImagePullBackOff (10 s doubling to 5 min) with events, and is
//     looked for again at each retry. command replaces the image's Entrypoint and args its Cmd; $(VAR) references in
//     command, args and env values are expanded as Kubernetes expands them. The program run is the file at that
//     path inside the image, taken out of its layers into a cache keyed by image digest, never a file of the
//     machine: a path the image lacks is a CreateContainerError. The image's Env is the base environment.
//   - runAsNonRoot is checked against runAsUser and the image's user, with the kubelet's messages
//     (CreateContainerConfigError).
//   - Env: value, fieldRef (metadata.name/namespace/uid/labels/annotations, spec.nodeName,
//     spec.serviceAccountName, status.podIP(s), status.hostIP(s)), resourceFieldRef, secretKeyRef,
//     configMapKeyRef, envFrom, with optional references; KUBERNETES_SERVICE_HOST/PORT name the host apiserver.
//   - Volumes: secret, configMap, downwardAPI, projected (serviceAccountToken through the TokenRequest API, bound to
//     the pod and refreshed at 80 % of its lifetime; secret; configMap; downwardAPI) and emptyDir, with items,
//     defaultMode, optional and subPath. Files are written with the kubelet's atomic-writer layout (a ..data symlink
//     swapped on update) and follow their Secret or ConfigMap within a moment of a change (the kubelet watches
//     them), so controller-runtime's certwatcher sees a renewed certificate at once. A subPath of such a volume is
//     a copy made when the container starts: like the kubelet's bind mount, it does not follow updates.
//   - Probes: startup, readiness and liveness; httpGet (HTTP, HTTPS unverified, named or numbered port), tcpSocket
//     and exec, with initialDelaySeconds, periodSeconds, timeoutSeconds and the thresholds. Readiness drives the
//     containers' ready flags and the pod's ContainersReady and Ready conditions (readiness gates included), so
//     Deployments, rollouts and PodDisruptionBudgets behave as in a cluster. Unhealthy and Killing events.
//   - postStart and preStop hooks (exec, httpGet, sleep).
//   - Restarts: restartPolicy Always, OnFailure, Never (and per init container); crash-loop back-off, immediate
//     then 10 s doubling to 5 minutes, reset after 10 minutes of running; restartCount, lastState; Job pods end
//     Succeeded or Failed.
//   - Status: phase, conditions with lastTransitionTime, podIP(s), hostIP(s), startTime, container statuses with
//     containerID process://<pid>, state, lastState, ready, started, restartCount, image and imageID (the image's
//     digest).
//   - Deletion: SIGTERM to the process group, the grace period, SIGKILL, then the object is deleted with grace 0 and
//     a UID precondition. The processes of a pod whose object disappears are stopped.
//   - Events: Pulled, Created, Started, Killing, BackOff, Failed, Unhealthy, FailedMount, hook failures.
//
// # What differs, because there are no containers
//
// As processes (the default):
//
//   - No isolation: every process shares the machine's network, file system, users and PID space.
//   - Ports: every declared containerPort is given a free port on 127.0.0.1, recorded on the pod in the annotation
//     PortsAnnotation ({"<port name or number>": <local port>}). An argument whose value (the whole token, or what
//     follows "--flag=") has the form [host]:<declared containerPort> is rewritten to 127.0.0.1:<local port>;
//     anything else is left alone, so a process listening on a port it does not declare listens on the machine's
//     port (two replicas collide). Probes, hooks and the service proxy use the local ports. Pod IP and host IP are
//     127.0.0.1; hostPort and hostNetwork mean nothing more.
//   - Paths: a volumeMount's mountPath appearing as a path prefix in an argument or an env value (at its start or
//     after = : , a space or a quote) is rewritten to the local folder the volume lives in, longest mountPath
//     first; so is workingDir. A working folder outside any volume is a folder of the container's own, which is
//     also $HOME unless the image or the container sets it.
//   - The service account token: the process cannot find it at /var/run/secrets/kubernetes.io/serviceaccount, so
//     when the pod mounts a volume there, $KUBECONFIG (unless the container sets it) names a kubeconfig that reads
//     the token and ca.crt from that volume's folder (client-go re-reads a tokenFile, so refreshes reach it).
//     Programs that load the standard client rules (flag, $KUBECONFIG, in-cluster) work; one that calls
//     rest.InClusterConfig directly does not.
//   - No DNS: Service names resolve only through the service proxy, for clients that honour HTTPS_PROXY (the
//     karmada-apiserver). Pods get no service link variables besides KUBERNETES_*.
//   - Security context: only runAsNonRoot is checked. runAsUser, runAsGroup, fsGroup, supplementalGroups,
//     capabilities, privileged, allowPrivilegeEscalation, readOnlyRootFilesystem, seccomp, AppArmor, SELinux,
//     procMount and sysctls cannot be enforced: processes run as the kubelet's user. readOnly mounts are not
//     enforced either.
//   - Resources: requests and limits are reported (resourceFieldRef) but not enforced (no cgroups, no OOMKilled).
//   - Programs: only static binaries behave as in the image; a dynamically linked one would load the machine's
//     libraries, and a shell script's paths are the machine's.
//   - The kubelet acts with the credentials it is given (the environment's admin), not as system:node under
//     NodeRestriction, and writes the ports annotation, which a real kubelet may not.
//   - Not supported, as processes or containers: gRPC probes (they fail with a message), ephemeral containers, the kubelet API (kubectl
//     logs/exec/port-forward: read the log files), termination messages, in-place resize, static pods, eviction,
//     image pull secrets and pull policy (every policy looks in the image folders), emptyDir medium and sizeLimit,
//     volume types other than those above (the pod fails, reason UnsupportedVolume, with a FailedMount event).
//
// # Under a container runtime
//
// With Config.Runtime set to RuntimePodman (local-kubelet --container-runtime podman, `make up
// CONTAINER_RUNTIME=podman`), each container is a `podman run` with runc, storage of the kubelet's own under
// <root dir>/podman: the image loaded once from its archive, then run by its ID. Everything above stays as it is
// (images found in the image folders, environment, volumes written by the kubelet, probes, hooks, restarts,
// status, events), except:
//
//   - Security context: enforced as a CRI runtime enforces it: runAsUser, runAsGroup, supplementalGroups and
//     fsGroup (the volumes the kubelet writes get the fsGroup, readable by it, after every write), capabilities,
//     privileged, allowPrivilegeEscalation, readOnlyRootFilesystem (no writable tmpfs added, as in Kubernetes) and
//     seccomp (RuntimeDefault is podman's default profile; unset or Unconfined runs without one, the kubelet's
//     default). What podman cannot say as Kubernetes means (runAsGroup without runAsUser, a Localhost seccomp
//     profile) is a CreateContainerConfigError, never a weaker container.
//   - Mounts: each volume is bind-mounted at its mountPath, read-only when the mount says so and always for
//     Secret, ConfigMap, downward API and projected volumes, as the kubelet mounts them; paths are not rewritten,
//     and the service account token is where Kubernetes puts it, so in-cluster configuration works.
//   - Network: still the machine's (podman's host network), with the ports translated as for processes: the
//     container listens on the local ports its listen addresses are rewritten to.
//   - containerID is process://<pid> of the container's main process on this machine, which the kubelet signals
//     (SIGTERM, the grace period, SIGKILL) as a runtime signals a container's init. Exec probes and hooks run with
//     `podman exec`.
//   - The containers do not die with the kubelet: the next local-kubelet removes what a dead one left before it
//     starts any pod, and `make down` removes podman's storage.
//   - Resources are still not enforced: no cgroup limits are set.
//
// # The service proxy
//
// The same process serves an HTTP CONNECT proxy (Config.ProxyAddress) that plays the service network for clients
// outside the cluster: "<service>.<namespace>.svc[.cluster.local]:<port>" resolves to the Service's port, its
// targetPort (number or name) to a running, ready (or any, with publishNotReadyAddresses), non-terminating pod
// matching the selector, and that to the pod's local port; connections are balanced round-robin over those pods;
// no such pod is 503, an unknown Service or port 404. TLS stays end to end, so a serving certificate must carry
// the Service's DNS name, exactly as in production. The karmada-apiserver runs with HTTPS_PROXY pointing at it: its
// webhook client (client-go's transport, http.ProxyFromEnvironment) then reaches "https://<svc>.<ns>.svc/..."
// webhook URLs as a real karmada-apiserver does through the host's DNS; Go never proxies loopback or localhost, so
// nothing else it dials changes. GET /healthz on the same address answers once the kubelet is registered and its
// caches are synced.
package kubelet
