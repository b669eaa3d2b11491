package controller

import (
	"fmt"
	"sync"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

// business is a business quota over the namespaces labelled business=<a name unique to the spec>, and its
// namespaces.
type business struct {
	label      string
	name       string
	namespaces []string
}

// newBusiness creates n namespaces labelled into a new business, and its quota limiting cpu to hardCPU.
func newBusiness(n int, hardCPU string) *business {
	GinkgoHelper()
	b := &business{label: "shop-" + rand.String(5)}
	b.name = b.label
	for range n {
		b.namespaces = append(b.namespaces, b.newNamespace(true))
	}
	q := &quotav1alpha1.KarmadaBusinessQuota{
		ObjectMeta: metav1.ObjectMeta{Name: b.name},
		Spec: quotav1alpha1.KarmadaBusinessQuotaSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"business": b.label}},
			KarmadaQuotaSpec:  quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", hardCPU)},
		},
	}
	Expect(k8s.Create(ctx, q)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, q))).To(Succeed()) })
	return b
}

// newNamespace creates a namespace, in the business or not.
func (b *business) newNamespace(in bool) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: b.label + "-"}}
	if in {
		ns.Labels = map[string]string{"business": b.label}
	}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

// move moves a namespace into the business, or out of it, by its label.
func (b *business) move(namespace string, in bool) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ns corev1.Namespace
		if err := k8s.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
			return err
		}
		if in {
			ns.Labels = map[string]string{"business": b.label}
		} else {
			delete(ns.Labels, "business")
		}
		return k8s.Update(ctx, &ns)
	})).To(Succeed())
}

func (b *business) quota() *quotav1alpha1.KarmadaBusinessQuota {
	GinkgoHelper()
	var q quotav1alpha1.KarmadaBusinessQuota
	Expect(k8s.Get(ctx, client.ObjectKey{Name: b.name}, &q)).To(Succeed())
	return &q
}

// usedByNamespace is the business quota's status per namespace, as "namespace=cpu" strings.
func usedByNamespace(q *quotav1alpha1.KarmadaBusinessQuota) []string {
	var out []string
	for _, n := range q.Status.Namespaces {
		out = append(out, n.Name+"="+framework.Canonical(n.Used))
	}
	return out
}

// cpuPlaced is the cpu the stored bindings of the namespaces place, in millicores.
func cpuPlaced(namespaces ...string) int64 {
	GinkgoHelper()
	var total int64
	for _, ns := range namespaces {
		used, _ := trueUsage(ns, list("cpu", "1"))
		q := used[corev1.ResourceCPU]
		total += q.MilliValue()
	}
	return total
}

// placeConcurrently creates a binding of 1 cpu per replica in each of the business's namespaces, round robin, and
// places one replica of each at once; it returns how many placements were admitted, and fails on any error but the
// business quota's refusal.
func (b *business) placeConcurrently(n int) int {
	GinkgoHelper()
	bindings := make([]*workv1alpha2.ResourceBinding, n)
	for i := range n {
		bindings[i] = mustCreate(utiltesting.MakeBinding(b.namespaces[i%len(b.namespaces)], fmt.Sprintf("web-%d", i)).Requests(list("cpu", "1")))
	}
	var admitted sync.WaitGroup
	var mu sync.Mutex
	count := 0
	for _, rb := range bindings {
		admitted.Add(1)
		go func() {
			defer GinkgoRecover()
			defer admitted.Done()
			err := place(rb, cluster("member1", 1))
			if err == nil {
				mu.Lock()
				count++
				mu.Unlock()
				return
			}
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a placement failed otherwise than refused by quota: %v", err)
			Expect(err.Error()).To(ContainSubstring("exceeded business quota: " + b.name))
		}()
	}
	admitted.Wait()
	return count
}

var _ = Describe("Business quotas", func() {
	It("refuses an empty namespace selector, in the apiserver's schema and in the webhook", func() {
		q := &quotav1alpha1.KarmadaBusinessQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "everything-" + rand.String(5)},
			Spec:       quotav1alpha1.KarmadaBusinessQuotaSpec{KarmadaQuotaSpec: quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "1")}},
		}
		err := k8s.Create(ctx, q)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("namespaceSelector must not be empty"))

		// An expression the schema cannot judge, a bad operator, is the webhook's to refuse.
		q.Spec.NamespaceSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "business", Operator: "Near"}}}
		err = k8s.Create(ctx, q)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring(webhookconfig.BusinessQuotaWebhook))
	})

	It("keeps a burst over several namespaces within hard, and counts each namespace's part", func() {
		startController(controller.Options{}, 0)
		b := newBusiness(3, "10")
		outsider := b.newNamespace(false)

		Expect(b.placeConcurrently(24)).To(Equal(10))
		Expect(cpuPlaced(b.namespaces...)).To(Equal(int64(10_000)))
		// A namespace outside the business is not limited by it.
		rb := mustCreate(utiltesting.MakeBinding(outsider, "web").Requests(list("cpu", "1")))
		Expect(place(rb, cluster("member1", 20))).To(Succeed())

		Eventually(func(g Gomega) {
			q := b.quota()
			g.Expect(framework.Canonical(q.Status.Used)).To(Equal(framework.Canonical(list("cpu", "10"))))
			g.Expect(framework.Canonical(q.Status.Reserved)).To(Equal(framework.Canonical(list("cpu", "0"))))
			g.Expect(q.Status.NamespaceCount).To(Equal(int32(3)))
			var sum int64
			for _, n := range q.Status.Namespaces {
				v := n.Used[corev1.ResourceCPU]
				sum += v.MilliValue()
			}
			g.Expect(sum).To(Equal(int64(10_000)))
			ledger := &quotav1alpha1.KarmadaBusinessQuotaLedger{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: b.name}, ledger)).To(Succeed())
			g.Expect(ledger.Reservations).To(BeEmpty())
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("keeps a burst over 50 namespaces within hard while namespaces move in and out, and leaks no reservation", func() {
		startController(controller.Options{}, 0)
		b := newBusiness(50, "40")
		// Three namespaces are labelled out and back in during the burst, one more out for good; none of the others
		// move, so what they place is bounded by hard at every admission.
		moving := b.namespaces[:4]
		steady := b.namespaces[4:]

		var moves sync.WaitGroup
		moves.Add(1)
		go func() {
			defer GinkgoRecover()
			defer moves.Done()
			// Out, in, out, in: back in the business at the end.
			for round := range 4 {
				for _, ns := range moving[:3] {
					b.move(ns, round%2 == 1)
				}
			}
			b.move(moving[3], false)
		}()
		admitted := b.placeConcurrently(100)
		moves.Wait()
		Expect(admitted).To(BeNumerically("<=", 40+2*len(moving)), "what the moving namespaces placed outside the business is all that can add")
		Expect(cpuPlaced(steady...)).To(BeNumerically("<=", int64(40_000)), "the namespaces that never moved stay within hard")

		selected := append([]string{}, steady...)
		selected = append(selected, moving[:3]...)
		Eventually(func(g Gomega) {
			q := b.quota()
			truth := cpuPlaced(selected...)
			used := q.Status.Used[corev1.ResourceCPU]
			g.Expect(used.MilliValue()).To(Equal(truth), "status.used is the sum over the namespaces selected now")
			g.Expect(q.Status.NamespaceCount).To(Equal(int32(len(selected))))
			g.Expect(framework.Canonical(q.Status.Reserved)).To(Equal(framework.Canonical(list("cpu", "0"))))
			ledger := &quotav1alpha1.KarmadaBusinessQuotaLedger{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: b.name}, ledger)).To(Succeed())
			g.Expect(ledger.Reservations).To(BeEmpty(), "every reservation settled, those of the namespace that left too")
			g.Expect(ledger.FoldedReservations).To(BeNil())
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("moves a namespace's usage with its label: out frees its share, in brings it back and refuses growth past hard", func() {
		startController(controller.Options{}, 0)
		b := newBusiness(2, "6")
		first, second := b.namespaces[0], b.namespaces[1]
		for i, ns := range b.namespaces {
			rb := mustCreate(utiltesting.MakeBinding(ns, fmt.Sprintf("web-%d", i)).Requests(list("cpu", "1")))
			Expect(place(rb, cluster("member1", 3))).To(Succeed())
		}
		full := mustCreate(utiltesting.MakeBinding(first, "api").Requests(list("cpu", "1")))
		err := place(full, cluster("member1", 1))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)

		By("labelled out, a namespace's usage leaves the business within seconds, and its room is free")
		b.move(second, false)
		Eventually(func() []string { return usedByNamespace(b.quota()) }).WithTimeout(10 * time.Second).
			Should(Equal([]string{first + "=" + framework.Canonical(list("cpu", "3"))}))
		Expect(framework.Canonical(b.quota().Status.Used)).To(Equal(framework.Canonical(list("cpu", "3"))))
		Eventually(func() error { return place(full, cluster("member1", 3)) }).WithTimeout(10 * time.Second).Should(Succeed())

		By("labelled back in, it brings its usage: over hard, nothing running is touched, and growth is refused")
		b.move(second, true)
		Eventually(func() string { return framework.Canonical(b.quota().Status.Used) }).WithTimeout(10 * time.Second).
			Should(Equal(framework.Canonical(list("cpu", "9"))))
		grow := mustCreate(utiltesting.MakeBinding(second, "grow").Requests(list("cpu", "1")))
		err = place(grow, cluster("member1", 1))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("exceeded business quota: " + b.name))
		Expect(cpuPlaced(b.namespaces...)).To(Equal(int64(9_000)), "what runs stays")
	})
})
