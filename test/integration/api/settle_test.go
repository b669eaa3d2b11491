package api

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/quotaio"
)

// The controller's settle is a JSON patch the apiserver applies to the ledger as it is when the patch arrives
// (quotaio.SettleLedger): what the tests below hold it to is how the real apiserver applies and refuses it.
var _ = Describe("A ledger's settle patch", func() {
	var expires metav1.Time
	BeforeEach(func() { expires = metav1.NewTime(time.Now().Add(time.Minute).Truncate(time.Second)) })

	reservation := func(name string, cpu string) quotav1alpha1.Reservation {
		return quotav1alpha1.Reservation{
			ReservedBy: quotav1alpha1.ReservationOwner{APIVersion: "work.karmada.io/v1alpha2", Kind: "ResourceBinding",
				Name: name, UID: types.UID("uid-" + name)},
			Generation:     1,
			Reserved:       corev1.ResourceList{"cpu": resource.MustParse(cpu)},
			ExpirationTime: expires,
		}
	}
	observed := func(cpu string) *quotav1alpha1.LedgerObserved {
		return &quotav1alpha1.LedgerObserved{Used: corev1.ResourceList{"cpu": resource.MustParse(cpu)}}
	}
	names := func(l *quotav1alpha1.KarmadaQuotaLedger) []string {
		var out []string
		for _, r := range l.Reservations {
			out = append(out, r.ReservedBy.Name)
		}
		return out
	}

	// ledgerOf creates a quota (a business quota when business) and its ledger with reservations a, b and c, and
	// returns the ledger as read.
	ledgerOf := func(business bool) *quotav1alpha1.KarmadaQuotaLedger {
		var q *quotav1alpha1.KarmadaQuota
		hard := corev1.ResourceList{"cpu": resource.MustParse("10")}
		if business {
			b := &quotav1alpha1.KarmadaBusinessQuota{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "settle-"},
				Spec: quotav1alpha1.KarmadaBusinessQuotaSpec{
					NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"business": "settle"}},
					KarmadaQuotaSpec:  quotav1alpha1.KarmadaQuotaSpec{Hard: hard},
				},
			}
			Expect(k8s.Create(ctx, b)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
			q = b.AsKarmadaQuota()
		} else {
			q = &quotav1alpha1.KarmadaQuota{ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(), Name: "team"},
				Spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard}}
			Expect(k8s.Create(ctx, q)).To(Succeed())
		}
		obj := quota.LedgerObject(q, nil)
		obj.QuotaGeneration = q.Generation
		obj.Observed = observed("1")
		obj.Reservations = []quotav1alpha1.Reservation{reservation("a", "1"), reservation("b", "2"), reservation("c", "3")}
		obj.ReservationCount = 3
		Expect(quotaio.WriteLedger(ctx, k8s, obj, true)).To(Succeed())
		if business {
			DeferCleanup(func() {
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, quotav1alpha1.BusinessLedgerFrom(obj)))).To(Succeed())
			})
		}
		stored, err := quotaio.GetLedger(ctx, k8s, client.ObjectKeyFromObject(obj))
		Expect(err).NotTo(HaveOccurred())
		return stored
	}
	// settled is stored after a recount that observed a's and c's writes: they leave, used grows by them.
	settled := func(stored *quotav1alpha1.KarmadaQuotaLedger) *quotav1alpha1.KarmadaQuotaLedger {
		obj := stored.DeepCopy()
		obj.Reservations = []quotav1alpha1.Reservation{stored.Reservations[1]}
		obj.ReservationCount = 1
		obj.Observed = observed("5")
		return obj
	}
	// admit adds a reservation to the stored ledger, as the webhook does between the recount's read and its write.
	admit := func(key client.ObjectKey, change func(*quotav1alpha1.KarmadaQuotaLedger)) {
		l, err := quotaio.GetLedger(ctx, k8s, key)
		Expect(err).NotTo(HaveOccurred())
		change(l)
		l.ReservationCount = int32(len(l.Reservations))
		Expect(quotaio.WriteLedger(ctx, k8s, l, false)).To(Succeed())
	}
	get := func(key client.ObjectKey) *quotav1alpha1.KarmadaQuotaLedger {
		l, err := quotaio.GetLedger(ctx, k8s, key)
		Expect(err).NotTo(HaveOccurred())
		return l
	}

	for _, business := range []bool{false, true} {
		kind := "a KarmadaQuota's"
		if business {
			kind = "a KarmadaBusinessQuota's"
		}
		It(fmt.Sprintf("lands on %s ledger over an admission made since the read, keeping its reservation", kind), func() {
			stored := ledgerOf(business)
			key := client.ObjectKeyFromObject(stored)
			admit(key, func(l *quotav1alpha1.KarmadaQuotaLedger) {
				l.Reservations = append(l.Reservations, reservation("d", "4"))
			})

			obj := settled(stored)
			patched, err := quotaio.SettleLedger(ctx, k8s, stored, obj)
			Expect(err).NotTo(HaveOccurred())
			Expect(patched).To(BeTrue(), "a settle is written as a patch")

			after := get(key)
			Expect(names(after)).To(Equal([]string{"b", "d"}), "a and c settled, d (admitted since the read) kept")
			Expect(after.Observed.Used.Cpu().String()).To(Equal("5"))
			Expect(after.ReservationCount).To(Equal(int32(2)), "the count corrected to the list the patch left")
			Expect(equality.Semantic.DeepEqual(after.Reservations, obj.Reservations)).To(BeTrue(),
				"obj gets the stored ledger: %+v", obj.Reservations)
		})
	}

	It("writes what nothing raced exactly as a whole write would", func() {
		stored := ledgerOf(false)
		obj := settled(stored)
		want := obj.DeepCopy()
		patched, err := quotaio.SettleLedger(ctx, k8s, stored, obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(patched).To(BeTrue())
		after := get(client.ObjectKeyFromObject(stored))
		Expect(equality.Semantic.DeepEqual(after.LedgerState, want.LedgerState)).To(BeTrue(), "stored %+v, want %+v", after.LedgerState, want.LedgerState)
		Expect(after.ResourceVersion).NotTo(Equal(stored.ResourceVersion))
	})

	DescribeTable("is refused, and the ledger left as the race left it, when what it removes changed",
		func(change func(*quotav1alpha1.KarmadaQuotaLedger)) {
			stored := ledgerOf(false)
			key := client.ObjectKeyFromObject(stored)
			admit(key, change)
			before := get(key)

			_, err := quotaio.SettleLedger(ctx, k8s, stored, settled(stored))
			Expect(apierrors.IsConflict(err)).To(BeTrue(), "a conflict, to read again: %v", err)
			after := get(key)
			Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "nothing written")
		},
		Entry("a reservation it removes was released and reserved again (a new expiry)", func(l *quotav1alpha1.KarmadaQuotaLedger) {
			l.Reservations[0].ExpirationTime = metav1.NewTime(l.Reservations[0].ExpirationTime.Add(time.Minute))
		}),
		Entry("the list moved under it (the oldest folded)", func(l *quotav1alpha1.KarmadaQuotaLedger) {
			l.FoldedReservations = &quotav1alpha1.FoldedReservations{Count: 1, Reserved: l.Reservations[0].Reserved, ExpirationTime: expires}
			l.Reservations = l.Reservations[1:]
		}),
		Entry("the quota's spec changed (the fence rose): the usage it counted may not be the new spec's", func(l *quotav1alpha1.KarmadaQuotaLedger) {
			l.QuotaGeneration++
		}),
	)

	It("is not used for a write that does more than settle", func() {
		stored := ledgerOf(false)
		obj := settled(stored)
		obj.Reservations = append(obj.Reservations, reservation("e", "1"))
		patched, err := quotaio.SettleLedger(ctx, k8s, stored, obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(patched).To(BeFalse(), "a reservation added is the webhook's kind of write, by compare-and-swap")
		Expect(get(client.ObjectKeyFromObject(stored)).ResourceVersion).To(Equal(stored.ResourceVersion))
	})
})
