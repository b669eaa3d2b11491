package kubelet

import (
	"context"
	"fmt"
	"runtime"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// DefaultCapacity is what the node offers the scheduler: large enough for any chart's requests.
var DefaultCapacity = corev1.ResourceList{
	corev1.ResourceCPU:              resource.MustParse("16"),
	corev1.ResourceMemory:           resource.MustParse("64Gi"),
	corev1.ResourcePods:             resource.MustParse("110"),
	corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
}

const (
	leaseDuration      = 40 * time.Second
	leaseRenewPeriod   = 10 * time.Second
	nodeStatusPeriod   = time.Minute
	nodeLeaseNamespace = "kube-node-lease"
)

// registerNode creates the Node, or takes over one left by a previous run, and reports it Ready.
func (k *Kubelet) registerNode(ctx context.Context) error {
	nodes := k.client.CoreV1().Nodes()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: k.cfg.NodeName,
		Labels: map[string]string{
			corev1.LabelHostname:   k.cfg.NodeName,
			corev1.LabelOSStable:   runtime.GOOS,
			corev1.LabelArchStable: runtime.GOARCH,
		},
	}}
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		if created, err = nodes.Get(ctx, k.cfg.NodeName, metav1.GetOptions{}); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("registering node %s: %w", k.cfg.NodeName, err)
	}
	k.nodeUID = created.UID
	return k.updateNodeStatus(ctx)
}

func (k *Kubelet) updateNodeStatus(ctx context.Context) error {
	nodes := k.client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	condition := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: status, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: now}
		for _, old := range node.Status.Conditions {
			if old.Type == t && old.Status == status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}
	node.Status.Capacity = k.capacity
	node.Status.Allocatable = k.capacity
	node.Status.Conditions = []corev1.NodeCondition{
		condition(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		condition(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		condition(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		condition(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "local-kubelet is posting ready status"),
	}
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: podIP},
		{Type: corev1.NodeHostName, Address: k.cfg.NodeName},
	}
	node.Status.NodeInfo = corev1.NodeSystemInfo{
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
		KubeletVersion:          "v1.35.3-local",
		ContainerRuntimeVersion: "local-process://1",
		OSImage:                 "local processes (karmada-quota local-kubelet)",
	}
	_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// heartbeat renews the node's Lease, which the node lifecycle controller reads as the kubelet being alive, and
// posts the node status now and then, as the kubelet does.
func (k *Kubelet) heartbeat(ctx context.Context) {
	leases := k.client.CoordinationV1().Leases(nodeLeaseNamespace)
	renew := func() {
		now := metav1.NewMicroTime(time.Now())
		lease, err := leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			lease = &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{
					Name: k.cfg.NodeName, Namespace: nodeLeaseNamespace,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: k.cfg.NodeName, UID: k.nodeUID}},
				},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity:       ptr.To(k.cfg.NodeName),
					LeaseDurationSeconds: ptr.To(int32(leaseDuration.Seconds())),
					RenewTime:            &now,
				},
			}
			_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		} else if err == nil {
			lease.Spec.RenewTime = &now
			_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		}
		if err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "Renewing the node lease")
		}
	}
	renew()
	leaseTicker := time.NewTicker(leaseRenewPeriod)
	defer leaseTicker.Stop()
	statusTicker := time.NewTicker(nodeStatusPeriod)
	defer statusTicker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-leaseTicker.C:
			renew()
		case <-statusTicker.C:
			if err := k.updateNodeStatus(ctx); err != nil && ctx.Err() == nil {
				klog.ErrorS(err, "Updating the node status")
			}
		}
	}
}
