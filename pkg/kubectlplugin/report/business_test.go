package report

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// shop is business quota shop over the namespaces labelled business=shop, as the controller counted it: 4 cpu and
// 8Gi in all, 2 cpu on member2; shop-dev uses 500m and 1Gi, shop-prod 2100m and 4608Mi; 500m of cpu reserved.
func shop() *quotav1alpha1.KarmadaBusinessQuota {
	hard := list("cpu", "4", "memory", "8Gi")
	b := &quotav1alpha1.KarmadaBusinessQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "uid-business-shop", Generation: 1},
		Spec: quotav1alpha1.KarmadaBusinessQuotaSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"business": "shop"}},
			KarmadaQuotaSpec: quotav1alpha1.KarmadaQuotaSpec{
				Hard:     hard,
				Clusters: []quotav1alpha1.ClusterLimit{{Name: "member2", Hard: list("cpu", "2")}},
			},
		},
	}
	b.Status.KarmadaQuotaStatus = quotav1alpha1.KarmadaQuotaStatus{
		ObservedGeneration: 1,
		Hard:               hard.DeepCopy(),
		Used:               list("cpu", "2600m", "memory", "5632Mi"),
		Reserved:           list("cpu", "500m", "memory", "0"),
		Clusters: []quotav1alpha1.ClusterUsage{
			{Name: "member1", Used: list("cpu", "1900m", "memory", "4Gi")},
			{Name: "member2", Used: list("cpu", "700m", "memory", "1536Mi"), Hard: list("cpu", "2")},
		},
		Conditions: []metav1.Condition{{
			Type: quotav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Calculated",
			Message: "Usage recounted", ObservedGeneration: 1, LastTransitionTime: utiltesting.FixedTime,
		}},
	}
	b.Status.NamespaceCount = 2
	// Listed in any order: the report sorts them.
	b.Status.Namespaces = []quotav1alpha1.NamespaceUsage{
		{Name: "shop-prod", Used: list("cpu", "2100m", "memory", "4608Mi")},
		{Name: "shop-dev", Used: list("cpu", "500m", "memory", "1Gi")},
	}
	return b
}

// shopLedger is shop's ledger: one admission of shop-prod's api, 500m of cpu on member2, not yet observed.
func shopLedger(b *quotav1alpha1.KarmadaBusinessQuota) *quotav1alpha1.KarmadaQuotaLedger {
	return &quotav1alpha1.KarmadaQuotaLedger{
		ObjectMeta: metav1.ObjectMeta{Name: b.Name, OwnerReferences: quota.LedgerOwner(b.AsKarmadaQuota())},
		LedgerState: quotav1alpha1.LedgerState{
			QuotaGeneration: 1,
			Reservations: []quotav1alpha1.Reservation{{
				ReservedBy: quotav1alpha1.ReservationOwner{APIVersion: "work.karmada.io/v1alpha2", Kind: "ResourceBinding",
					Namespace: "shop-prod", Name: "api-deployment", UID: "uid-shop-prod-api"},
				Generation:     4,
				Reserved:       list("cpu", "500m"),
				Clusters:       []quotav1alpha1.ClusterReservation{{Name: "member2", Reserved: list("cpu", "500m")}},
				ExpirationTime: metav1.NewTime(time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)),
			}},
			ReservationCount: 1,
		},
	}
}

// shopDevView is the AppliedBusinessQuota the controller keeps of shop in shop-dev.
func shopDevView() *quotav1alpha1.AppliedBusinessQuota {
	b := shop()
	return &quotav1alpha1.AppliedBusinessQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop-dev", Name: "shop", Generation: 1},
		Spec:       b.Spec.KarmadaQuotaSpec,
		Status: quotav1alpha1.AppliedBusinessQuotaStatus{
			Hard: b.Status.Hard, Used: b.Status.Used, Reserved: b.Status.Reserved,
			NamespaceUsed:      list("cpu", "500m", "memory", "1Gi"),
			Summary:            "cpu: 2600m/4, memory: 5632Mi/8Gi",
			NamespaceSummary:   "cpu: 500m/4, memory: 1Gi/8Gi",
			ObservedGeneration: 1,
		},
	}
}

// refusedBy is a Deployment's binding in namespace that the scheduler could not place: the webhook refused it
// with refusal.
func refusedBy(namespace, name string, replicas int32, requests corev1.ResourceList, refusal string) workv1alpha2.ResourceBinding {
	b := utiltesting.MakeBinding(namespace, name).Replicas(replicas).Requests(requests).
		Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded)
	b.Status.Conditions[0].Message = `admission webhook "resourcebinding.quota.karmada.io" denied the request: ` + refusal
	return *b.Obj()
}

// The bindings of shop's namespaces: sale in shop-dev short of cpu over the business; batch in shop-prod short of
// cpu over the business and on member2; web in shop-dev placed.
var (
	shopSale = refusedBy("shop-dev", "sale-deployment", 4, list("cpu", "500m", "memory", "256Mi"),
		"exceeded business quota: shop, cpu: requested 2, used 2600m, reserved 500m, hard 4")
	shopBatch = refusedBy("shop-prod", "batch-deployment", 1, list("cpu", "1", "memory", "256Mi"),
		"exceeded business quota: shop, cpu: requested 1, used 2600m, reserved 500m, hard 4, cpu in cluster member2: "+
			"requested 1, used 700m, reserved 500m, hard 2")
	shopWeb = *utiltesting.MakeBinding("shop-dev", "web-deployment").Replicas(1).Requests(list("cpu", "500m", "memory", "1Gi")).
		Cluster("member1", 1).Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj()
)

func TestDescribeBusiness(t *testing.T) {
	b := shop()
	got := DescribeBusiness(b, shopLedger(b), []workv1alpha2.ResourceBinding{shopSale, shopWeb, shopBatch})
	want := Quota{
		Kind: KindBusinessQuota, Name: "shop",
		Business: &Business{NamespaceSelector: "business=shop", NamespaceCount: 2, Namespaces: []NamespaceUsage{
			{Namespace: "shop-dev", Used: map[string]string{"cpu": "500m", "memory": "1Gi"}},
			{Namespace: "shop-prod", Used: map[string]string{"cpu": "2100m", "memory": "4608Mi"}},
		}},
		Status: Status{State: Current, Ready: "True", Reason: "Calculated", Message: "Usage recounted", Generation: 1, ObservedGeneration: 1},
		Resources: []Resource{
			{Name: "cpu", Used: "2600m", Reserved: "500m", Hard: "4", Available: "900m", UsedPercent: 65},
			{Name: "memory", Used: "5632Mi", Reserved: "0", Hard: "8Gi", Available: "2560Mi", UsedPercent: 68},
		},
		Clusters: []ClusterUsage{
			{Cluster: "member1", Used: map[string]string{"cpu": "1900m", "memory": "4Gi"}},
			{Cluster: "member2", Used: map[string]string{"cpu": "700m", "memory": "1536Mi"},
				Reserved: map[string]string{"cpu": "500m"}, Hard: map[string]string{"cpu": "2"}},
		},
		// Sorted by namespace, each named with its own.
		Waiting: []Waiting{
			{Namespace: "shop-dev", Binding: "sale-deployment", Workload: Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop-dev", Name: "sale-deployment"},
				Asks:  Asks{Replicas: 4, PerReplica: map[string]string{"cpu": "500m", "memory": "256Mi"}},
				Needs: map[string]string{"cpu": "2", "memory": "1Gi"},
				Short: []Shortfall{{Resource: "cpu", Need: "2", Available: "900m", ShortBy: "1100m", Hard: "4"}}},
			{Namespace: "shop-prod", Binding: "batch-deployment", Workload: Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop-prod", Name: "batch-deployment"},
				Asks:  Asks{Replicas: 1, PerReplica: map[string]string{"cpu": "1", "memory": "256Mi"}},
				Needs: map[string]string{"cpu": "1", "memory": "256Mi"},
				Short: []Shortfall{
					{Resource: "cpu", Need: "1", Available: "900m", ShortBy: "100m", Hard: "4"},
					{Resource: "cpu", Cluster: "member2", Need: "1", Available: "800m", ShortBy: "200m", Hard: "2"},
				}},
		},
		Reservations: []Reservation{{Kind: ReservedByBinding, APIVersion: "work.karmada.io/v1alpha2", Namespace: "shop-prod", Name: "api-deployment",
			Generation: 4, Reserved: map[string]string{"cpu": "500m"}, Clusters: map[string]map[string]string{"member2": {"cpu": "500m"}},
			Expires: "2030-01-01T00:00:00Z"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DescribeBusiness (-want +got):\n%s", diff)
	}
}

func TestDescribeApplied(t *testing.T) {
	cases := map[string]struct {
		view *quotav1alpha1.AppliedBusinessQuota
		want Quota
	}{
		"the business's figures, the namespace's part, the limits on members without use there": {
			view: shopDevView(),
			want: Quota{
				Kind: KindAppliedBusinessQuota, Namespace: "shop-dev", Name: "shop",
				Status: Status{State: Applied, Ready: "Unknown", Generation: 1, ObservedGeneration: 1},
				Resources: []Resource{
					{Name: "cpu", Used: "2600m", Reserved: "500m", Hard: "4", Available: "900m", UsedPercent: 65, NamespaceUsed: "500m"},
					{Name: "memory", Used: "5632Mi", Reserved: "0", Hard: "8Gi", Available: "2560Mi", UsedPercent: 68, NamespaceUsed: "1Gi"},
				},
				Clusters:           []ClusterUsage{{Cluster: "member2", Hard: map[string]string{"cpu": "2"}}},
				MemberUsageUnknown: memberUsageForAdmins,
				// The namespace's own binding, not named with its namespace: it is the view's.
				Waiting: []Waiting{{Binding: "sale-deployment",
					Workload: Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop-dev", Name: "sale-deployment"},
					Asks:     Asks{Replicas: 4, PerReplica: map[string]string{"cpu": "500m", "memory": "256Mi"}},
					Needs:    map[string]string{"cpu": "2", "memory": "1Gi"},
					Short:    []Shortfall{{Resource: "cpu", Need: "2", Available: "900m", ShortBy: "1100m", Hard: "4"}}}},
			},
		},
		"not written for a count yet": {
			view: &quotav1alpha1.AppliedBusinessQuota{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop-dev", Name: "shop"},
				Spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "4")},
			},
			want: Quota{
				Kind: KindAppliedBusinessQuota, Namespace: "shop-dev", Name: "shop",
				Status:             Status{State: NoStatus, Ready: "Unknown"},
				Resources:          []Resource{{Name: "cpu", Used: "0", Reserved: "0", Hard: "4", Available: "4", NamespaceUsed: "0"}},
				MemberUsageUnknown: memberUsageForAdmins,
				// Refused by another quota: it fits this one.
				Waiting: []Waiting{{Binding: "sale-deployment",
					Workload: Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop-dev", Name: "sale-deployment"},
					Asks:     Asks{Replicas: 4, PerReplica: map[string]string{"cpu": "500m", "memory": "256Mi"}},
					Needs:    map[string]string{"cpu": "2"}}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := DescribeApplied(tc.view, []workv1alpha2.ResourceBinding{shopSale, shopWeb})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DescribeApplied (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteBusinessQuota(t *testing.T) {
	b := shop()
	cases := map[string]struct {
		quota Quota
		want  string
	}{
		"for admins: the selector, each namespace's part, use per cluster, waiting bindings and reservations by namespace": {
			quota: DescribeBusiness(b, shopLedger(b), []workv1alpha2.ResourceBinding{shopSale, shopBatch}),
			want: lines(
				"Name:        shop",
				"Kind:        business quota, over the namespaces it selects together",
				"Namespaces:  business=shop (2 selected)",
				"Status:      status is current (Ready, observed generation 1)",
				"Resource     Used    Reserved  Hard",
				"--------     ----    --------  ----",
				"cpu          2600m   500m      4",
				"memory       5632Mi  0         8Gi",
				"Usage per namespace:",
				"  Namespace  cpu    memory",
				"  ---------  ---    ------",
				"  shop-dev   500m   1Gi",
				"  shop-prod  2100m  4608Mi",
				"Usage per member cluster:",
				"  Cluster  Resource  Used    Reserved  Hard",
				"  -------  --------  ----    --------  ----",
				"  member1  cpu       1900m   0         -",
				"  member1  memory    4Gi     0         -",
				"  member2  cpu       700m    500m      2",
				"  member2  memory    1536Mi  0         -",
				"Bindings waiting on this quota:",
				"  Binding                     Workload                     Asks for                      Missing here",
				"  -------                     --------                     --------                      ------------",
				"  shop-dev/sale-deployment    Deployment/sale-deployment   4 × (cpu 500m, memory 256Mi)  cpu 1100m",
				"  shop-prod/batch-deployment  Deployment/batch-deployment  1 × (cpu 1, memory 256Mi)     cpu 100m, cpu 200m in cluster member2",
				"Reservations (admitted, not yet observed):",
				"  Held by                                   Reserved                      Expires               For",
				"  -------                                   --------                      -------               ---",
				"  ResourceBinding shop-prod/api-deployment  cpu 500m (member2: cpu 500m)  2030-01-01T00:00:00Z  the binding's placement (generation 4)",
			),
		},
		"as a namespace sees it: its part beside the business's figures, the limits on members, nothing of the others": {
			quota: DescribeApplied(shopDevView(), []workv1alpha2.ResourceBinding{shopSale}),
			want: lines(
				"Name:       shop",
				"Namespace:  shop-dev",
				"Kind:       business quota, over the namespaces of a business together: Used and Reserved are the business's",
				"Status:     as the controller last counted the business quota, at its generation 1",
				"Resource    Used    Reserved  Hard  Used by shop-dev",
				"--------    ----    --------  ----  ----------------",
				"cpu         2600m   500m      4     500m",
				"memory      5632Mi  0         8Gi   1Gi",
				"Usage per member cluster:  <not shown: the business's use per member cluster is in the KarmadaBusinessQuota, which cluster admins read>",
				"Limits on member clusters:",
				"  Where            Resource  Hard",
				"  -----            --------  ----",
				"  cluster member2  cpu       2",
				"Bindings waiting on this quota:",
				"  Binding          Workload                    Asks for                      Missing here",
				"  -------          --------                    --------                      ------------",
				"  sale-deployment  Deployment/sale-deployment  4 × (cpu 500m, memory 256Mi)  cpu 1100m",
			),
		},
		"a business quota selecting no namespace": {
			quota: Quota{Kind: KindBusinessQuota, Name: "empty", Status: Status{State: NoStatus},
				Business:  &Business{NamespaceSelector: "business=gone"},
				Resources: []Resource{{Name: "cpu", Used: "0", Reserved: "0", Hard: "1"}}},
			want: lines(
				"Name:        empty",
				"Kind:        business quota, over the namespaces it selects together",
				"Namespaces:  business=gone (none selected)",
				"Status:      no status yet: the controller has not computed one (is quota-controller running?)",
				"Resource     Used  Reserved  Hard",
				"--------     ----  --------  ----",
				"cpu          0     0         1",
				"Usage per namespace:  <none>",
				"Usage per member cluster:  <none>",
				"Bindings waiting on this quota:  <none>",
			),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteQuota(&b, tc.quota); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("WriteQuota (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBusinessRows(t *testing.T) {
	view := shopDevView()
	rows := append(Rows([]quotav1alpha1.KarmadaQuota{*ready(utiltesting.MakeQuota("shop-dev", "shop-dev").Hard(list("cpu", "3")).Used(list("cpu", "500m")), 1).Obj()}),
		append(BusinessRows([]quotav1alpha1.KarmadaBusinessQuota{*shop()}), AppliedRows([]quotav1alpha1.AppliedBusinessQuota{*view})...)...)
	SortByName(rows)
	want := []Row{
		{Quota: "shop", Kind: KindBusinessQuota, Resource: "cpu", Used: "2600m", Reserved: "500m", Hard: "4", UsedPercent: 65, Status: Current},
		{Quota: "shop", Kind: KindBusinessQuota, Resource: "memory", Used: "5632Mi", Reserved: "0", Hard: "8Gi", UsedPercent: 68, Status: Current},
		{Namespace: "shop-dev", Quota: "shop", Kind: KindAppliedBusinessQuota, Resource: "cpu", Used: "2600m", Reserved: "500m", Hard: "4", UsedPercent: 65, Status: Applied},
		{Namespace: "shop-dev", Quota: "shop", Kind: KindAppliedBusinessQuota, Resource: "memory", Used: "5632Mi", Reserved: "0", Hard: "8Gi", UsedPercent: 68, Status: Applied},
		{Namespace: "shop-dev", Quota: "shop-dev", Resource: "cpu", Used: "500m", Reserved: "0", Hard: "3", UsedPercent: 16, Status: Current},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}

	cases := map[string]struct {
		rows          []Row
		withNamespace bool
		want          string
	}{
		"across namespaces: a business quota once, * for its namespaces": {rows: []Row{rows[0], rows[1], rows[4]}, withNamespace: true, want: lines(
			"NAMESPACE   QUOTA             RESOURCE   USED     HARD   USED%   STATUS",
			"*           shop (business)   cpu        2600m    4      65%     Current",
			"*           shop (business)   memory     5632Mi   8Gi    68%     Current",
			"shop-dev    shop-dev          cpu        500m     3      16%     Current",
		)},
		"one namespace: the business quota applying to it": {rows: rows[2:], want: lines(
			"QUOTA             RESOURCE   USED     HARD   USED%   STATUS",
			"shop (business)   cpu        2600m    4      65%     Applied",
			"shop (business)   memory     5632Mi   8Gi    68%     Applied",
			"shop-dev          cpu        500m     3      16%     Current",
		)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteRows(&b, tc.rows, tc.withNamespace); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("WriteRows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteBusinessQuotas(t *testing.T) {
	unready := shop()
	unready.Name, unready.Generation = "games", 2
	unready.Spec.NamespaceSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "business", Operator: metav1.LabelSelectorOpIn, Values: []string{"games", "arcade"}}}}
	listed := ListBusiness([]quotav1alpha1.KarmadaBusinessQuota{*shop(), *unready})
	var b strings.Builder
	if err := WriteBusinessQuotas(&b, listed); err != nil {
		t.Fatal(err)
	}
	want := lines(
		"NAME    NAMESPACES   USED/HARD                        STATUS    SELECTOR",
		"games   2            cpu 2600m/4, memory 5632Mi/8Gi   Behind    business in (arcade,games)",
		"shop    2            cpu 2600m/4, memory 5632Mi/8Gi   Current   business=shop",
	)
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteBusinessQuotas (-want +got):\n%s", diff)
	}
}

func TestWriteWhyBusinessQuota(t *testing.T) {
	// shop-dev's own quota: 3 cpu, 500m used; on member2 1 cpu, none used there.
	own := ready(utiltesting.MakeQuota("shop-dev", "shop").Hard(list("cpu", "3")).Used(list("cpu", "500m")), 1).Obj()
	own.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member2", Hard: list("cpu", "1")}}
	quotas := []quotav1alpha1.KarmadaQuota{*own}
	read := AppliedBusinessQuotas{Items: []quotav1alpha1.AppliedBusinessQuota{*shopDevView()}}
	sale := func(refusal string) *workv1alpha2.ResourceBinding {
		b := refusedBy("shop-dev", "sale-deployment", 4, list("cpu", "500m", "memory", "256Mi"), refusal)
		return &b
	}
	const relayed = `admission webhook "resourcebinding.quota.karmada.io" denied the request: `
	header := func(refusal string) []string {
		return []string{
			"Workload:   Deployment shop-dev/sale",
			"Binding:    sale-deployment",
			"Scheduled:  False (QuotaExceeded)",
			"Message:    " + relayed + refusal,
			"Asks for:   4 replicas × (cpu 500m, memory 256Mi), none placed",
		}
	}
	refusedOverBusiness := "exceeded business quota: shop, cpu: requested 2, used 2600m, reserved 500m, hard 4"
	// The namespace's quota shop and the business quota shop both refuse, each on member2: neither is taken for the other.
	refusedBoth := "exceeded quota: shop, cpu in cluster member2: requested 2, used 0, reserved 0, hard 1 " +
		"(can never fit: the request alone exceeds hard); exceeded business quota: shop, cpu: requested 2, used 2600m, " +
		"reserved 500m, hard 4, cpu in cluster member2: requested 2, used 700m, reserved 500m, hard 2"

	cases := map[string]struct {
		binding *workv1alpha2.ResourceBinding
		applied AppliedBusinessQuotas
		want    string
	}{
		"refused by the business quota: named as one, recomputed from the namespace's view": {
			binding: sale(refusedOverBusiness),
			applied: read,
			want: lines(append(header(refusedOverBusiness),
				"Verdict:    not scheduled: business quota shop refuses it; it fits once usage drops",
				"",
				"Business quota shop refuses it:",
				"  Resource  Need  Available  Short by  Hard  Can fit",
				"  --------  ----  ---------  --------  ----  -------",
				"  cpu       2     900m       1100m     4     once usage drops by 1100m",
			)...),
		},
		"a quota of the namespace and a business quota of the same name: each its own limits": {
			binding: sale(refusedBoth),
			applied: read,
			want: lines(append(header(refusedBoth),
				"Verdict:    not scheduled: quota shop (in cluster member2) and business quota shop (namespace-wide and in cluster member2) refuse it; "+
					"as the scheduler placed it, it can never fit under shop in cluster member2: what it places there alone exceeds the limit there",
				"",
				"Quota shop refuses it:",
				"  Resource  Where            Need  Available  Short by  Hard  Can fit",
				"  --------  -----            ----  ---------  --------  ----  -------",
				"  cpu       cluster member2  2     1          1         1     not as placed: the need there alone exceeds hard",
				"",
				"Business quota shop refuses it:",
				"  Resource  Where            Need  Available  Short by  Hard  Can fit",
				"  --------  -----            ----  ---------  --------  ----  -------",
				"  cpu       all clusters     2     900m       1100m     4     once usage drops by 1100m",
				"  cpu       cluster member2  2     800m       1200m     2     once usage there drops by 1200m",
			)...),
		},
		"the business quota's view not readable: named from the refusal, its figures then": {
			binding: sale(refusedOverBusiness),
			applied: AppliedBusinessQuotas{Unknown: "you may not list AppliedBusinessQuotas in namespace shop-dev"},
			want: lines(append(header(refusedOverBusiness),
				"Verdict:    not scheduled: business quota shop refused it at the scheduler's last attempt; it fits once usage drops",
				"",
				"Business quota shop refused it at the scheduler's last attempt, with these figures (what it has available now is "+
					"unknown: you may not list AppliedBusinessQuotas in namespace shop-dev):",
				"  Resource  Need  Available  Short by  Hard  Can fit",
				"  --------  ----  ---------  --------  ----  -------",
				"  cpu       2     900m       1100m     4     once usage drops by 1100m",
			)...),
		},
		"no view of it in the namespace: named from the refusal, and why it may be missing": {
			binding: sale(refusedBoth),
			applied: AppliedBusinessQuotas{},
			want: lines(append(header(refusedBoth),
				"Verdict:    not scheduled: quota shop (in cluster member2) refuses it, and business quota shop (namespace-wide and in cluster member2) "+
					"refused it at the scheduler's last attempt; as the scheduler placed it, it can never fit under shop in cluster member2: "+
					"what it places there alone exceeds the limit there",
				"",
				"Quota shop refuses it:",
				"  Resource  Where            Need  Available  Short by  Hard  Can fit",
				"  --------  -----            ----  ---------  --------  ----  -------",
				"  cpu       cluster member2  2     1          1         1     not as placed: the need there alone exceeds hard",
				"",
				"Business quota shop refused it at the scheduler's last attempt, with these figures (what it has available now is "+
					"unknown: namespace shop-dev has no AppliedBusinessQuota shop: the business quota no longer selects it, or the "+
					"controller has not written it there yet):",
				"  Resource  Where            Need  Available  Short by  Hard  Can fit",
				"  --------  -----            ----  ---------  --------  ----  -------",
				"  cpu       all clusters     2     900m       1100m     4     once usage drops by 1100m",
				"  cpu       cluster member2  2     800m       1200m     2     once usage there drops by 1200m",
			)...),
		},
		"scheduled: charged by the namespace's quota and by the business quota": {
			binding: utiltesting.MakeBinding("shop-dev", "sale-deployment").Replicas(1).Requests(list("cpu", "500m", "memory", "1Gi")).
				Cluster("member1", 1).Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj(),
			applied: read,
			want: lines(
				"Workload:   Deployment shop-dev/sale",
				"Binding:    sale-deployment",
				"Scheduled:  True (Success)",
				"Asks for:   1 replica × (cpu 500m, memory 1Gi), 1 placed",
				"Verdict:    scheduled; charged by quota shop and business quota shop",
				"",
				"Quota shop charges it:",
				"  Resource  Total  member1",
				"  --------  -----  -------",
				"  cpu       500m   500m",
				"",
				"Business quota shop charges it:",
				"  Resource  Total  member1",
				"  --------  -----  -------",
				"  cpu       500m   500m",
				"  memory    1Gi    1Gi",
			),
		},
	}
	workload := Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop-dev", Name: "sale"}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteWhy(&b, Explain(workload, tc.binding, quotas, tc.applied, nil, Events{})); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("WriteWhy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessageDenials(t *testing.T) {
	message := `admission webhook "resourcebinding.quota.karmada.io" denied the request: exceeded quota: team-a, pods: ` +
		`requested 3, used 19, reserved 0, hard 20; exceeded business quota: shop, cpu: requested 8, used 3, reserved 500m, ` +
		`hard 4 (can never fit: the request alone exceeds hard), memory in cluster group eu: requested 2Gi, used 7Gi, ` +
		`reserved 0, hard 8Gi, must specify requests for cpu,memory: the quota limits them and the binding places replicas without them`
	want := []messageDenial{
		{quota: "team-a", short: []Shortfall{{Resource: "pods", Need: "3", Available: "1", ShortBy: "2", Hard: "20"}}},
		{quota: "shop", business: true, short: []Shortfall{
			{Resource: "cpu", Need: "8", Available: "500m", ShortBy: "7500m", Hard: "4", NeverFits: true},
			{Resource: "memory", Group: "eu", Need: "2Gi", Available: "1Gi", ShortBy: "1Gi", Hard: "8Gi"},
		}, missing: []string{"cpu", "memory"}},
	}
	if diff := cmp.Diff(want, messageDenials(message), cmp.AllowUnexported(messageDenial{})); diff != "" {
		t.Errorf("messageDenials (-want +got):\n%s", diff)
	}
}

// The webhook must keep writing what messageDenials and quotasIn read of a business quota's denial.
func TestBusinessDenialFormatMatchesTheLedger(t *testing.T) {
	d := &quota.Denial{Quota: "shop", Business: true, Exceeded: []quota.Exceeded{
		{Resource: "cpu", Requested: "2", Used: "2600m", Reserved: "0", Hard: "4"},
	}}
	want := []messageDenial{{quota: "shop", business: true,
		short: []Shortfall{{Resource: "cpu", Need: "2", Available: "1400m", ShortBy: "600m", Hard: "4"}}}}
	if diff := cmp.Diff(want, messageDenials(d.Error()), cmp.AllowUnexported(messageDenial{})); diff != "" {
		t.Errorf("messageDenials(%q) (-want +got):\n%s", d.Error(), diff)
	}
	if quotas, business := quotasIn(d.Error()); len(quotas) != 0 || !cmp.Equal(business, []string{"shop"}) {
		t.Errorf("quotasIn(%q) = %q, %q; want none, and business quota shop", d.Error(), quotas, business)
	}
}
