package api

import (
	"encoding/json"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "api-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

func fullQuota(ns string) *quotav1alpha1.KarmadaQuota {
	return &quotav1alpha1.KarmadaQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns},
		Spec: quotav1alpha1.KarmadaQuotaSpec{
			Hard: corev1.ResourceList{
				"cpu":                      resource.MustParse("100"),
				"requests.memory":          resource.MustParse("200Gi"),
				"nvidia.com/gpu":           resource.MustParse("8"),
				"pods":                     resource.MustParse("500"),
				"count/deployments.apps":   resource.MustParse("50"),
				"services":                 resource.MustParse("20"),
				"requests.hugepages-2Mi":   resource.MustParse("1Gi"),
				"ephemeral-storage":        resource.MustParse("1Ti"),
				"count/widgets.example.io": resource.MustParse("3"),
			},
		},
	}
}

var _ = Describe("KarmadaQuota CRD", func() {
	It("round-trips spec and status through the apiserver", func() {
		ns := newNamespace()
		q := fullQuota(ns)
		want := q.Spec.DeepCopy()
		Expect(k8s.Create(ctx, q)).To(Succeed())

		var got quotav1alpha1.KarmadaQuota
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(q), &got)).To(Succeed())
		Expect(equality.Semantic.DeepEqual(got.Spec, *want)).To(BeTrue(), "spec changed on the way: %+v", got.Spec)
		Expect(got.Generation).To(Equal(int64(1)))

		status := quotav1alpha1.KarmadaQuotaStatus{
			ObservedGeneration: 1,
			Hard:               want.Hard,
			Used:               corev1.ResourceList{"cpu": resource.MustParse("3500m")},
			Reserved:           corev1.ResourceList{"cpu": resource.MustParse("500m")},
			Clusters: []quotav1alpha1.ClusterUsage{
				{Name: "member1", Used: corev1.ResourceList{"cpu": resource.MustParse("2")}},
				{Name: "member2", Used: corev1.ResourceList{"cpu": resource.MustParse("1500m")}},
			},
			Summary: "cpu 3500m/100",
			Conditions: []metav1.Condition{{
				Type: quotav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Calculated",
				LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second)), ObservedGeneration: 1,
			}},
		}
		got.Status = *status.DeepCopy()
		Expect(k8s.Status().Update(ctx, &got)).To(Succeed())

		var back quotav1alpha1.KarmadaQuota
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(q), &back)).To(Succeed())
		Expect(equality.Semantic.DeepEqual(back.Status, status)).To(BeTrue(), "status changed on the way:\n got %+v\nwant %+v", back.Status, status)
		Expect(back.Generation).To(Equal(int64(1)), "a status write must not bump the generation")
	})

	It("takes no reservation in a quota's status: a webhook of a release before the ledger fails closed", func() {
		ns := newNamespace()
		q := fullQuota(ns)
		Expect(k8s.Create(ctx, q)).To(Succeed())
		q.Status.Reservations = []quotav1alpha1.Reservation{{
			ReservedBy:     quotav1alpha1.ReservationOwner{APIVersion: "work.karmada.io/v1alpha2", Kind: "ResourceBinding", Name: "web-deployment", UID: types.UID("0b0e5a7e-1")},
			Generation:     2,
			Reserved:       corev1.ResourceList{"cpu": resource.MustParse("500m")},
			ExpirationTime: metav1.NewTime(time.Now().Add(2 * time.Minute).Truncate(time.Second)),
		}}
		err := k8s.Status().Update(ctx, q)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("status.reservations"))
	})

	It("stores a ledger as written", func() {
		ns := newNamespace()
		q := fullQuota(ns)
		Expect(k8s.Create(ctx, q)).To(Succeed())
		l := &quotav1alpha1.KarmadaQuotaLedger{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: q.Name, OwnerReferences: quota.LedgerOwner(q)},
			LedgerState: quotav1alpha1.LedgerState{
				QuotaGeneration: 1,
				Observed: &quotav1alpha1.LedgerObserved{Used: corev1.ResourceList{"cpu": resource.MustParse("3")},
					Clusters: []quotav1alpha1.ClusterUsed{{Name: "member1", Used: corev1.ResourceList{"cpu": resource.MustParse("3")}}}},
				Reservations: []quotav1alpha1.Reservation{{
					ReservedBy:     quotav1alpha1.ReservationOwner{APIVersion: "work.karmada.io/v1alpha2", Kind: "ResourceBinding", Name: "web-deployment", UID: types.UID("0b0e5a7e-1")},
					Generation:     2,
					Reserved:       corev1.ResourceList{"cpu": resource.MustParse("500m")},
					Clusters:       []quotav1alpha1.ClusterReservation{{Name: "member1", Reserved: corev1.ResourceList{"cpu": resource.MustParse("500m")}}},
					ExpirationTime: metav1.NewTime(time.Now().Add(2 * time.Minute).Truncate(time.Second)),
				}},
				ReservationCount: 1,
				FoldedReservations: &quotav1alpha1.FoldedReservations{Count: 3, Reserved: corev1.ResourceList{"cpu": resource.MustParse("1500m")},
					ExpirationTime: metav1.NewTime(time.Now().Add(2 * time.Minute).Truncate(time.Second))},
			},
		}
		want := l.DeepCopy()
		Expect(k8s.Create(ctx, l)).To(Succeed())
		var back quotav1alpha1.KarmadaQuotaLedger
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(l), &back)).To(Succeed())
		Expect(equality.Semantic.DeepEqual(back.QuotaGeneration, want.QuotaGeneration) &&
			equality.Semantic.DeepEqual(back.Observed, want.Observed) &&
			equality.Semantic.DeepEqual(back.Reservations, want.Reservations) &&
			equality.Semantic.DeepEqual(back.FoldedReservations, want.FoldedReservations) &&
			back.ReservationCount == 1).To(BeTrue(), "ledger changed on the way:\n got %+v\nwant %+v", back, want)
	})

	It("is served under its short name and the karmada-io category", func() {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		list, err := dc.ServerResourcesForGroupVersion(quotav1alpha1.GroupVersion.String())
		Expect(err).NotTo(HaveOccurred())
		var found *metav1.APIResource
		for i := range list.APIResources {
			if list.APIResources[i].Name == "karmadaquotas" {
				found = &list.APIResources[i]
			}
		}
		Expect(found).NotTo(BeNil())
		Expect(found.Namespaced).To(BeTrue())
		Expect(found.ShortNames).To(ContainElement("kq"))
		Expect(found.Categories).To(ContainElement("karmada-io"))
	})

	It("accepts a status write at the current resourceVersion and refuses a stale one", func() {
		ns := newNamespace()
		q := fullQuota(ns)
		Expect(k8s.Create(ctx, q)).To(Succeed())

		var fresh, stale quotav1alpha1.KarmadaQuota
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(q), &fresh)).To(Succeed())
		fresh.DeepCopyInto(&stale)

		fresh.Status.Reserved = corev1.ResourceList{"cpu": resource.MustParse("1")}
		Expect(k8s.Status().Update(ctx, &fresh)).To(Succeed())

		stale.Status.Reserved = corev1.ResourceList{"cpu": resource.MustParse("2")}
		err := k8s.Status().Update(ctx, &stale)
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "a stale status write must conflict, got %v", err)

		var back quotav1alpha1.KarmadaQuota
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(q), &back)).To(Succeed())
		Expect(back.Status.Reserved.Cpu().String()).To(Equal("1"), "the stale write must not have landed")
	})

	It("ignores status in a spec write and spec in a status write", func() {
		ns := newNamespace()
		q := fullQuota(ns)
		q.Status.Summary = "set on create"
		Expect(k8s.Create(ctx, q)).To(Succeed())
		Expect(q.Status.Summary).To(BeEmpty(), "status on create must be dropped by the status subresource")

		q.Status.Summary = "written through status"
		q.Spec.Hard["pods"] = resource.MustParse("1")
		Expect(k8s.Status().Update(ctx, q)).To(Succeed())
		var back quotav1alpha1.KarmadaQuota
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(q), &back)).To(Succeed())
		Expect(back.Status.Summary).To(Equal("written through status"))
		Expect(back.Spec.Hard.Pods().String()).To(Equal("500"))
	})

	DescribeTable("the schema refuses what cannot be enforced",
		func(mutate func(*quotav1alpha1.KarmadaQuota), wantMessage string) {
			ns := newNamespace()
			q := fullQuota(ns)
			mutate(q)
			err := k8s.Create(ctx, q)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring(wantMessage))
		},
		Entry("limits.*", func(q *quotav1alpha1.KarmadaQuota) {
			q.Spec.Hard["limits.cpu"] = resource.MustParse("1")
		}, "a ResourceBinding carries resource requests only"),
		Entry("an unknown scope", func(q *quotav1alpha1.KarmadaQuota) {
			q.Spec.ScopeSelector = scope("Terminating", corev1.ScopeSelectorOpExists)
		}, `supported values: "PriorityClass"`),
		Entry("an unknown operator", func(q *quotav1alpha1.KarmadaQuota) {
			q.Spec.ScopeSelector = scope(corev1.ResourceQuotaScopePriorityClass, "Equals", "high")
		}, `supported values: "In", "NotIn", "Exists", "DoesNotExist"`),
		Entry("In without values", func(q *quotav1alpha1.KarmadaQuota) {
			q.Spec.ScopeSelector = scope(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpIn)
		}, "values must be non-empty when operator is In or NotIn"),
		Entry("Exists with values", func(q *quotav1alpha1.KarmadaQuota) {
			q.Spec.ScopeSelector = scope(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpExists, "high")
		}, "values must be empty when operator is Exists or DoesNotExist"),
	)
})

func scope(name corev1.ResourceQuotaScope, op corev1.ScopeSelectorOperator, values ...string) *quotav1alpha1.ScopeSelector {
	return &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
		{ScopeName: name, Operator: op, Values: values},
	}}
}

var _ = Describe("Karmada ResourceBinding", func() {
	// The webhook keys reservations by the generation an admitted write produces. These are the apiserver facts
	// that rule rests on: a create is generation 1, a spec change bumps it by one, a status write leaves it.
	It("is created unscheduled, placed by a merge patch of spec.clusters, and only spec writes bump generation", func() {
		ns := newNamespace()
		rb := &workv1alpha2.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "web-deployment", Namespace: ns},
			Spec: workv1alpha2.ResourceBindingSpec{
				Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web"},
				Replicas: 4,
				ReplicaRequirements: &workv1alpha2.ReplicaRequirements{
					ResourceRequest:   corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("128Mi")},
					PriorityClassName: "high",
				},
			},
		}
		Expect(k8s.Create(ctx, rb)).To(Succeed())
		Expect(rb.Generation).To(Equal(int64(1)))
		Expect(rb.Spec.Clusters).To(BeEmpty())

		// Karmada's scheduler writes its placement as a JSON merge patch of spec.clusters.
		placement := []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 3}, {Name: "member2", Replicas: 1}}
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"clusters": placement}})
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Patch(ctx, rb, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		Expect(rb.Spec.Clusters).To(Equal(placement))
		Expect(rb.Generation).To(Equal(int64(2)), "a spec change bumps generation by one")

		// The scheduler's condition goes through the status subresource.
		rb.Status.Conditions = []metav1.Condition{{
			Type: workv1alpha2.Scheduled, Status: metav1.ConditionTrue, Reason: workv1alpha2.BindingReasonSuccess,
			LastTransitionTime: metav1.Now(),
		}}
		Expect(k8s.Status().Update(ctx, rb)).To(Succeed())
		Expect(rb.Generation).To(Equal(int64(2)), "a status write does not bump generation")

		// A metadata-only change (labels) does not either.
		rb.Labels = map[string]string{"touched": "yes"}
		Expect(k8s.Update(ctx, rb)).To(Succeed())
		Expect(rb.Generation).To(Equal(int64(2)), "a metadata-only write does not bump generation")

		// Scaling is a spec change.
		rb.Spec.Clusters[0].Replicas = 5
		Expect(k8s.Update(ctx, rb)).To(Succeed())
		Expect(rb.Generation).To(Equal(int64(3)))

		var back workv1alpha2.ResourceBinding
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rb), &back)).To(Succeed())
		Expect(back.Spec.ReplicaRequirements.ResourceRequest.Cpu().String()).To(Equal("100m"))
		Expect(back.Spec.Clusters).To(Equal([]workv1alpha2.TargetCluster{{Name: "member1", Replicas: 5}, {Name: "member2", Replicas: 1}}))
		Expect(meta(back.Status.Conditions, workv1alpha2.Scheduled)).To(Equal(metav1.ConditionTrue))
	})

	It("keeps a binding with a finalizer readable while it is deleted", func() {
		ns := newNamespace()
		rb := &workv1alpha2.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns, Finalizers: []string{"karmada.io/binding-controller"}},
			Spec: workv1alpha2.ResourceBindingSpec{
				Resource: workv1alpha2.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cm"},
				Clusters: []workv1alpha2.TargetCluster{{Name: "member1"}},
			},
		}
		Expect(k8s.Create(ctx, rb)).To(Succeed())
		Expect(k8s.Delete(ctx, rb)).To(Succeed())

		var back workv1alpha2.ResourceBinding
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rb), &back)).To(Succeed())
		Expect(back.DeletionTimestamp).NotTo(BeNil(), "a binding with a finalizer lingers as deleting; the quota keeps counting it")
		// Setting deletionTimestamp is itself a generation bump: a deleting binding is observed one generation past
		// its last admitted write, so a reservation keyed at that write is settled by seeing it deleting.
		Expect(back.Generation).To(Equal(int64(2)))

		back.Finalizers = nil
		Expect(k8s.Update(ctx, &back)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(rb), &back))
		}).WithTimeout(10 * time.Second).Should(BeTrue())
	})
})

func meta(conds []metav1.Condition, t string) metav1.ConditionStatus {
	for _, c := range conds {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}
