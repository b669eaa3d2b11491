package webhook

import (
	"errors"
	"fmt"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

func newNamespace(labels ...string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "webhook-", Labels: map[string]string{}}}
	for i := 0; i+1 < len(labels); i += 2 {
		ns.Labels[labels[i]] = labels[i+1]
	}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

func createQuota(q *quotav1alpha1.KarmadaQuota) *quotav1alpha1.KarmadaQuota {
	Expect(k8s.Create(ctx, q)).To(Succeed())
	return q
}

func getQuota(ns, name string) *quotav1alpha1.KarmadaQuota {
	var q quotav1alpha1.KarmadaQuota
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &q)).To(Succeed())
	return &q
}

// createBinding creates a binding as Karmada's detector does: unscheduled, with the workload's per-replica
// requirements. The builder's UID and generation are the apiserver's to set.
func createBinding(b *utiltesting.BindingWrapper) (*workv1alpha2.ResourceBinding, error) {
	return testenv.CreateBinding(ctx, k8s, b)
}

func mustCreateBinding(b *utiltesting.BindingWrapper) *workv1alpha2.ResourceBinding {
	rb, err := createBinding(b)
	Expect(err).NotTo(HaveOccurred())
	return rb
}

// place writes a placement as Karmada's scheduler does: a JSON merge patch of spec.clusters.
func place(rb *workv1alpha2.ResourceBinding, clusters ...workv1alpha2.TargetCluster) error {
	return placeWith(rb, nil, clusters...)
}

func placeWith(rb *workv1alpha2.ResourceBinding, opts []client.PatchOption, clusters ...workv1alpha2.TargetCluster) error {
	return framework.Place(ctx, k8s, rb, opts, clusters...)
}

var (
	cluster = framework.Cluster
	list    = framework.List
)

func requests(cpu, memory string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return l
}

// expectQuotaExceeded asserts the exact shape Karmada's scheduler recognises: 403 with reason QuotaExceeded.
func expectQuotaExceeded(err error) *apierrors.StatusError {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	var statusErr *apierrors.StatusError
	Expect(errors.As(err, &statusErr)).To(BeTrue(), "not a status error: %v", err)
	Expect(statusErr.ErrStatus.Code).To(Equal(int32(403)), "%v", err)
	Expect(statusErr.ErrStatus.Reason).To(Equal(metav1.StatusReason("QuotaExceeded")), "%v", err)
	return statusErr
}

// getLedger reads a quota's ledger object (empty when there is none): the webhook's reservations are there.
func getLedger(ns, name string) *quotav1alpha1.KarmadaQuotaLedger {
	GinkgoHelper()
	stored, err := framework.Ledger(ctx, k8s, ns, name)
	Expect(err).NotTo(HaveOccurred())
	return stored
}

// reservedOf is what q holds reserved, from its ledger.
func reservedOf(q *quotav1alpha1.KarmadaQuota) corev1.ResourceList {
	GinkgoHelper()
	reserved, err := framework.Reserved(ctx, k8s, q)
	Expect(err).NotTo(HaveOccurred())
	return reserved
}

// reservationsOf returns the quota's reservations for one binding, keyed by generation.
func reservationsOf(q *quotav1alpha1.KarmadaQuota, rb *workv1alpha2.ResourceBinding) map[int64]corev1.ResourceList {
	GinkgoHelper()
	out := map[int64]corev1.ResourceList{}
	for _, r := range getLedger(q.Namespace, q.Name).Reservations {
		if r.ReservedBy.UID == rb.UID {
			Expect(out).NotTo(HaveKey(r.Generation), "two reservations for one key")
			out[r.Generation] = r.Reserved
		}
	}
	return out
}

// equalQuantities compares resource lists by value, so 1000m equals 1.
func equalQuantities(want corev1.ResourceList) OmegaMatcher {
	return WithTransform(framework.Canonical, Equal(framework.Canonical(want)))
}

func quotaName(i int) string { return fmt.Sprintf("q%d", i) }
