package audit

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/controlplane"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/systems"
)

// TestAuditBusinessQuota audits karmada-quota's business configuration against stored objects: one business quota
// over namespaces a and b, which hold 2 and 1 placed bindings of 1 CPU (500m on each member cluster). It must be
// held to the sum over both namespaces, and what its status says each uses to that namespace's bindings.
func TestAuditBusinessQuota(t *testing.T) {
	const business = "shop"
	used := func(cpu string) corev1.ResourceList { return utiltesting.List("cpu", cpu) }
	// status is the business quota's status: used in all, on each member cluster, and in each namespace.
	status := func(total, onEach, inA, inB string) quotav1alpha1.KarmadaBusinessQuotaStatus {
		return quotav1alpha1.KarmadaBusinessQuotaStatus{
			KarmadaQuotaStatus: quotav1alpha1.KarmadaQuotaStatus{
				Hard:     used("10"),
				Used:     used(total),
				Clusters: []quotav1alpha1.ClusterUsage{{Name: "member1", Used: used(onEach)}, {Name: "member2", Used: used(onEach)}},
			},
			NamespaceCount: 2,
			Namespaces:     []quotav1alpha1.NamespaceUsage{{Name: "a", Used: used(inA)}, {Name: "b", Used: used(inB)}},
		}
	}
	cases := []struct {
		name    string
		hard    string
		status  quotav1alpha1.KarmadaBusinessQuotaStatus
		audited []string
		// unlabelled is a namespace of the audit outside the business.
		unlabelled bool
		want       Result
	}{{
		name:    "exact",
		hard:    "10",
		status:  status("3", "1500m", "2", "1"),
		audited: []string{"a", "b"},
		want:    Result{Admitted: 3000, Hard: 10000, Quotas: 1, Namespaces: 2, SharedQuotas: 1, SharedNamespaces: 2},
	}, {
		// The business quota's totals count every namespace it governs, audited or not.
		name:    "one namespace audited",
		hard:    "10",
		status:  status("3", "1500m", "2", "1"),
		audited: []string{"b"},
		want:    Result{Admitted: 1000, Hard: 10000, Quotas: 1, Namespaces: 1, SharedQuotas: 1, SharedNamespaces: 1},
	}, {
		name:    "the namespaces' parts swapped",
		hard:    "10",
		status:  status("3", "1500m", "1", "2"),
		audited: []string{"a", "b"},
		want:    Result{Admitted: 3000, Hard: 10000, Quotas: 1, Namespaces: 2, SharedQuotas: 1, SharedNamespaces: 2, DriftQuotas: 1, DriftParts: 2},
	}, {
		name:    "used misses a binding",
		hard:    "10",
		status:  status("2", "1500m", "2", "1"),
		audited: []string{"a", "b"},
		want:    Result{Admitted: 3000, Hard: 10000, Quotas: 1, Namespaces: 2, SharedQuotas: 1, SharedNamespaces: 2, DriftQuotas: 1, DriftDown: 1000},
	}, {
		name:    "a member cluster's used off",
		hard:    "10",
		status:  status("3", "1", "2", "1"),
		audited: []string{"a", "b"},
		want:    Result{Admitted: 3000, Hard: 10000, Quotas: 1, Namespaces: 2, SharedQuotas: 1, SharedNamespaces: 2, DriftQuotas: 1},
	}, {
		// Each namespace within a third of hard, the business past it.
		name:    "over hard together",
		hard:    "2",
		status:  status("3", "1500m", "2", "1"),
		audited: []string{"a", "b"},
		want:    Result{Admitted: 3000, Hard: 2000, Over: 1000, OverQuotas: 1, Quotas: 1, Namespaces: 2, SharedQuotas: 1, SharedNamespaces: 2},
	}, {
		name:       "a namespace no quota governs",
		hard:       "10",
		status:     status("3", "1500m", "2", "1"),
		audited:    []string{"a", "b", "c"},
		unlabelled: true,
		want:       Result{Admitted: 3000, Hard: 10000, Quotas: 1, Namespaces: 3, SharedQuotas: 1, SharedNamespaces: 2, Ungoverned: 1},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scheme, err := testenv.Scheme()
			if err != nil {
				t.Fatal(err)
			}
			labels := map[string]string{systems.BusinessLabel: business}
			q := utiltesting.BusinessQuota(business, used(tc.hard))
			q.Spec.NamespaceSelector.MatchLabels = labels
			q.Status = tc.status
			objs := []client.Object{utiltesting.Namespace("a", labels), utiltesting.Namespace("b", labels), utiltesting.Namespace("c", nil), q}
			for _, b := range []struct{ ns, name string }{{"a", "one"}, {"a", "two"}, {"b", "one"}} {
				objs = append(objs, utiltesting.MakeBinding(b.ns, b.name).Replicas(2).Requests(used("500m")).
					Cluster("member1", 1).Cluster("member2", 1).Obj())
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
			sys := &systems.KarmadaQuota{Env: systems.Env{CP: &controlplane.ControlPlane{Client: c}}, Business: true}
			got, err := Audit(context.Background(), c, sys, tc.audited)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("audit:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
