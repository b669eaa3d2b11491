package localkarmada

import (
	"context"
	"fmt"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"golang.org/x/sync/errgroup"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv/loopback"
)

// NodesPerMember fake nodes of NodeCPU and NodeMemory each make a member cluster. They are large on purpose: the
// Karmada scheduler divides replicas by what each member can still take, and small nodes would make it refuse
// placements the quotas under test should decide.
const (
	NodesPerMember = 2
	NodeCPU        = "64"
	NodeMemory     = "256Gi"
	NodePods       = "500"
)

// memberComponents starts, in every member, what turns a Deployment into running pods: kube-controller-manager,
// kube-scheduler, and KWOK, which plays the kubelet of fake nodes.
func (s *setup) memberComponents(ctx context.Context, members []APIServer) error {
	g, ctx := errgroup.WithContext(ctx)
	for i, m := range members {
		g.Go(func() error {
			ports, err := loopback.FreePorts(3)
			if err != nil {
				return err
			}
			if err := s.process(ctx, m.Name+"-kube-controller-manager", fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0]),
				s.kubeControllerManagerArgs(m, ports[0])...); err != nil {
				return err
			}
			if err := s.process(ctx, m.Name+"-kube-scheduler", fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[1]),
				s.bin["kube-scheduler"],
				"--kubeconfig", m.Kubeconfig,
				"--authentication-kubeconfig", m.Kubeconfig, "--authorization-kubeconfig", m.Kubeconfig,
				"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(ports[1]),
				"--tls-cert-file", s.serve.Cert, "--tls-private-key-file", s.serve.Key,
			); err != nil {
				return err
			}
			if err := s.process(ctx, m.Name+"-kwok", fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[2]),
				s.bin["kwok"],
				"--kubeconfig", m.Kubeconfig,
				"--config", s.opts.KWOKStages,
				"--manage-all-nodes",
				"--server-address", fmt.Sprintf("127.0.0.1:%d", ports[2]),
				"--cidr", fmt.Sprintf("10.%d.0.0/16", 100+i),
				"--node-lease-duration-seconds", "40",
			); err != nil {
				return err
			}
			return s.nodes(ctx, m)
		})
	}
	return g.Wait()
}

// nodes registers the member's fake nodes and waits until KWOK reports them Ready.
func (s *setup) nodes(ctx context.Context, m APIServer) error {
	c, err := Client(m.Kubeconfig)
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(NodeCPU),
		corev1.ResourceMemory: resource.MustParse(NodeMemory),
		corev1.ResourcePods:   resource.MustParse(NodePods),
	}
	for i := range NodesPerMember {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("%s-node-%d", m.Name, i),
				Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": fmt.Sprintf("%s-node-%d", m.Name, i)},
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if err := c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return waitFor(ctx, m.Name+"'s nodes to be Ready", func(ctx context.Context) error {
		var nodes corev1.NodeList
		if err := c.List(ctx, &nodes); err != nil {
			return err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready < NodesPerMember {
			return fmt.Errorf("%d of %d nodes Ready", ready, NodesPerMember)
		}
		return nil
	})
}

// join registers every member with Karmada in Push mode and waits until each is Ready (joinMember).
func (s *setup) join(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, m := range s.env.Members {
		g.Go(func() error { return s.env.joinMember(ctx, m, s.pki.caPEM) })
	}
	return g.Wait()
}

// joinMember registers a member with Karmada in Push mode, as `karmadactl join` does, without waiting for the
// member's token controller: a ServiceAccount bound to cluster-admin in the member, a token for it from the
// TokenRequest API, the two Secrets Karmada reads in karmada-cluster (replaced when a previous join left them),
// and the Cluster object; then it waits until Karmada reports the member Ready.
func (e *Environment) joinMember(ctx context.Context, m APIServer, caPEM []byte) error {
	karmada, err := Client(e.Karmada.Kubeconfig)
	if err != nil {
		return err
	}
	token, err := memberToken(ctx, m)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	secrets := []*corev1.Secret{
		{
			ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: "karmada-cluster"},
			Data:       map[string][]byte{"token": []byte(token), "caBundle": caPEM},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: m.Name + "-impersonator", Namespace: "karmada-cluster"},
			Data:       map[string][]byte{"token": []byte(token)},
		},
	}
	for _, secret := range secrets {
		err := karmada.Create(ctx, secret)
		if apierrors.IsAlreadyExists(err) {
			err = karmada.Update(ctx, secret)
		}
		if err != nil {
			return fmt.Errorf("joining %s: %w", m.Name, err)
		}
	}
	cluster := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name},
		Spec: clusterv1alpha1.ClusterSpec{
			APIEndpoint:           m.URL,
			SyncMode:              clusterv1alpha1.Push,
			SecretRef:             &clusterv1alpha1.LocalSecretReference{Namespace: "karmada-cluster", Name: m.Name},
			ImpersonatorSecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: "karmada-cluster", Name: m.Name + "-impersonator"},
		},
	}
	if err := karmada.Create(ctx, cluster); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("joining %s: %w", m.Name, err)
	}
	return waitFor(ctx, m.Name+" to be Ready in Karmada", func(ctx context.Context) error {
		var cluster clusterv1alpha1.Cluster
		if err := karmada.Get(ctx, client.ObjectKey{Name: m.Name}, &cluster); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
			return fmt.Errorf("conditions %v", cluster.Status.Conditions)
		}
		return nil
	})
}

func memberToken(ctx context.Context, m APIServer) (string, error) {
	c, err := Client(m.Kubeconfig)
	if err != nil {
		return "", err
	}
	const namespace, name = "karmada-cluster", "karmada-controller-manager"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		sa,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "karmada-controller-manager"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
		},
	} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	}
	request := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](365 * 24 * 3600)},
	}
	if err := c.SubResource("token").Create(ctx, sa, request); err != nil {
		return "", fmt.Errorf("requesting a token: %w", err)
	}
	return request.Status.Token, nil
}
