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

	"github.com/karmada-quota/karmada-quota/internal/testenv"
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

// What a ledger observed on each member cluster is one string too (quotav1alpha1.ClusterUsed); releases before
// wrote an object each, in a list the schema keyed by cluster name (x-kubernetes-list-type map), now atomic.
var _ = Describe("Cluster usages written by an earlier release, as objects", func() {
	It("are served unpruned, read, and written as strings by the next write", func() {
		q := &quotav1alpha1.KarmadaQuota{ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(), Name: "team"},
			Spec: quotav1alpha1.KarmadaQuotaSpec{
				Hard:     corev1.ResourceList{"cpu": resource.MustParse("10")},
				Clusters: []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: corev1.ResourceList{"cpu": resource.MustParse("4")}}},
			}}
		Expect(k8s.Create(ctx, q)).To(Succeed())
		legacyClusters := []any{map[string]any{"name": "member1", "used": map[string]any{"cpu": "3"}}}
		legacy := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": quotav1alpha1.GroupVersion.String(), "kind": "KarmadaQuotaLedger",
			"quotaGeneration": q.Generation,
			"observed":        map[string]any{"used": map[string]any{"cpu": "3"}, "clusters": legacyClusters},
		}}
		legacy.SetNamespace(q.Namespace)
		legacy.SetName(q.Name)
		legacy.SetOwnerReferences(quota.LedgerOwner(q))
		Expect(k8s.Create(ctx, legacy)).To(Succeed())
		key := client.ObjectKeyFromObject(legacy)
		storedClusters := func() []any {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(legacy.GroupVersionKind())
			Expect(k8s.Get(ctx, key, u)).To(Succeed())
			list, _, err := unstructured.NestedSlice(u.Object, "observed", "clusters")
			Expect(err).NotTo(HaveOccurred())
			return list
		}
		Expect(storedClusters()).To(Equal(legacyClusters), "served as stored, nothing pruned")

		stored, err := quotaio.GetLedger(ctx, k8s, key)
		Expect(err).NotTo(HaveOccurred())
		l, err := quota.NewLedger(q, stored)
		Expect(err).NotTo(HaveOccurred())
		Expect(l.RoomOn("member1")).To(Equal(resources.List{"requests.cpu": 1000}), "member1's 3 CPU of its 4 observed")

		By("the controller's settle writing what it counted")
		obj := stored.DeepCopy()
		obj.Observed = &quotav1alpha1.LedgerObserved{Used: corev1.ResourceList{"cpu": resource.MustParse("1")},
			Clusters: []quotav1alpha1.ClusterUsed{{Name: "member1", Used: corev1.ResourceList{"cpu": resource.MustParse("1")}}}}
		patched, err := quotaio.SettleLedger(ctx, k8s, stored, obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(patched).To(BeTrue())
		Expect(storedClusters()).To(Equal([]any{"member1:cpu=1"}))
	})

	It("survive the schema's change from a list keyed by name to an atomic list of strings", func() {
		const group = "upgrade.test.karmada.io"
		crd, err := testenv.ChartCRDInGroup("quota.karmada.io_karmadaquotaledgers.yaml", group)
		Expect(err).NotTo(HaveOccurred())
		current := crd.DeepCopy()
		By("serving the schema releases before had: an object per cluster, keyed by name")
		for i := range crd.Spec.Versions {
			observed := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["observed"]
			clusters := observed.Properties["clusters"]
			item := clusters.Items.Schema
			item.Type, item.XPreserveUnknownFields = "object", nil
			mapType := "map"
			clusters.XListType, clusters.XListMapKeys = &mapType, []string{"name"}
			observed.Properties["clusters"] = clusters
			crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["observed"] = observed
		}
		Expect(k8s.Create(ctx, crd)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, crd))).To(Succeed()) })
		gvk := quotav1alpha1.GroupVersion.WithKind("KarmadaQuotaLedger")
		gvk.Group = group
		u := &unstructured.Unstructured{Object: map[string]any{
			"observed": map[string]any{"clusters": []any{
				map[string]any{"name": "member1", "used": map[string]any{"cpu": "3"}},
				map[string]any{"name": "member2", "used": map[string]any{"cpu": "1"}},
			}},
		}}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(newNamespace())
		u.SetName("team")
		Eventually(func() error { return k8s.Create(ctx, u, client.FieldOwner("quota-webhook")) }).Should(Succeed(), "once the copy is served")

		By("changing the schema to this release's, and writing strings over what the old one stored")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(crd), crd)).To(Succeed())
		crd.Spec = current.Spec
		Expect(k8s.Update(ctx, crd)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed())
			g.Expect(unstructured.SetNestedSlice(u.Object, []any{"member1:cpu=2", "member2:cpu=1"}, "observed", "clusters")).To(Succeed())
			g.Expect(k8s.Update(ctx, u, client.FieldOwner("quota-controller"))).To(Succeed())
		}).Should(Succeed(), "once the new schema is served")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed())
		list, _, err := unstructured.NestedSlice(u.Object, "observed", "clusters")
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(Equal([]any{"member1:cpu=2", "member2:cpu=1"}))
	})
})
