package api

import (
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/quotaio"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// A reservation is written as one string (quotav1alpha1.Reservation); releases before wrote an object. What the
// specs below hold the real apiserver and the ledger's readers to: a ledger such a release left is served unpruned
// and read as it is; the next write stores strings (the controller's settle patch, which tests entries by their
// string, is refused and written whole); an object such a release appends during the rollout is still read; an
// object missing what a reservation needs is refused as before.
var _ = Describe("Reservations written by an earlier release, as objects", func() {
	objectForm := func(name string, expires metav1.Time) map[string]any {
		return map[string]any{
			"reservedBy": map[string]any{"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", "name": name, "uid": "uid-" + name},
			"generation": int64(1), "reserved": map[string]any{"cpu": "2"}, "expirationTime": expires.UTC().Format(time.RFC3339),
		}
	}
	stringForm := func(name string, expires metav1.Time) string {
		return "work.karmada.io/v1alpha2 ResourceBinding " + name + " uid-" + name + " 1 " + strconv.FormatInt(expires.Unix(), 10) + " cpu=2"
	}
	unstructuredLedger := func(key client.ObjectKey) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(quotav1alpha1.GroupVersion.String())
		u.SetKind("KarmadaQuotaLedger")
		Expect(k8s.Get(ctx, key, u)).To(Succeed())
		return u
	}
	storedList := func(key client.ObjectKey) []any {
		list, _, err := unstructured.NestedSlice(unstructuredLedger(key).Object, "reservations")
		Expect(err).NotTo(HaveOccurred())
		return list
	}

	It("are read, written as strings by the next write, and read beside strings", func() {
		expires := metav1.NewTime(time.Now().Add(time.Minute).Truncate(time.Second))
		q := &quotav1alpha1.KarmadaQuota{ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(), Name: "team"},
			Spec: quotav1alpha1.KarmadaQuotaSpec{Hard: corev1.ResourceList{"cpu": resource.MustParse("10")}}}
		Expect(k8s.Create(ctx, q)).To(Succeed())

		By("storing a ledger as an earlier release wrote it")
		legacy := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": quotav1alpha1.GroupVersion.String(), "kind": "KarmadaQuotaLedger",
			"quotaGeneration": q.Generation, "reservationCount": int64(2),
			"observed":     map[string]any{"used": map[string]any{"cpu": "1"}},
			"reservations": []any{objectForm("a", expires), objectForm("b", expires)},
		}}
		legacy.SetNamespace(q.Namespace)
		legacy.SetName(q.Name)
		legacy.SetOwnerReferences(quota.LedgerOwner(q))
		Expect(k8s.Create(ctx, legacy)).To(Succeed())
		key := client.ObjectKeyFromObject(legacy)
		Expect(storedList(key)).To(Equal(legacy.Object["reservations"]), "served as stored, nothing pruned")

		stored, err := quotaio.GetLedger(ctx, k8s, key)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.Reservations).To(HaveLen(2))
		want := quotav1alpha1.Reservation{
			ReservedBy: quotav1alpha1.ReservationOwner{APIVersion: "work.karmada.io/v1alpha2", Kind: "ResourceBinding", Name: "a", UID: "uid-a"},
			Generation: 1, Reserved: corev1.ResourceList{"cpu": resource.MustParse("2")}, ExpirationTime: expires,
		}
		Expect(equality.Semantic.DeepEqual(stored.Reservations[0], want)).To(BeTrue(), "read %#v", stored.Reservations[0])
		l, err := quota.NewLedger(q, stored)
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Reserved()).To(Equal(resources.List{"requests.cpu": 4000}), "both reservations charge")

		By("settling a's write: the patch tests a's string, is refused, and the whole write lands")
		obj := stored.DeepCopy()
		obj.Reservations = obj.Reservations[1:]
		obj.ReservationCount = 1
		obj.Observed = &quotav1alpha1.LedgerObserved{Used: corev1.ResourceList{"cpu": resource.MustParse("3")}}
		patched, err := quotaio.SettleLedger(ctx, k8s, stored, obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(patched).To(BeTrue())
		Expect(storedList(key)).To(Equal([]any{stringForm("b", expires)}), "b is stored as a string")

		By("an earlier release's replica appending an object during the rollout")
		u := unstructuredLedger(key)
		Expect(unstructured.SetNestedSlice(u.Object, append(storedList(key), objectForm("c", expires)), "reservations")).To(Succeed())
		Expect(k8s.Update(ctx, u)).To(Succeed())
		mixed, err := quotaio.GetLedger(ctx, k8s, key)
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, r := range mixed.Reservations {
			Expect(r.Malformed).To(BeEmpty())
			names = append(names, r.ReservedBy.Name)
		}
		Expect(names).To(Equal([]string{"b", "c"}))

		By("an object that is not a reservation")
		u = unstructuredLedger(key)
		Expect(unstructured.SetNestedSlice(u.Object, []any{map[string]any{"generation": int64(1)}}, "reservations")).To(Succeed())
		err = k8s.Update(ctx, u)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "refused by the object's schema: %v", err)
	})
})
