package metrics

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// webhookFamilies and controllerFamilies are the karmada_quota_* families each binary exports: a new metric must be
// added to the binary that produces it, and only there.
var (
	webhookFamilies = []string{
		"karmada_quota_admission_batch_retries_total",
		"karmada_quota_admission_batch_size",
		"karmada_quota_admission_duration_seconds",
		"karmada_quota_admission_requests_total",
		"karmada_quota_admission_unseen_quota_reads_total",
		"karmada_quota_estimator_requests_total",
		"karmada_quota_reservations_rolled_back_total",
		"karmada_quota_reservations_written_total",
		"karmada_quota_status_write_conflicts_total",
	}
	controllerFamilies = []string{
		"karmada_quota_bindings_requeued_total",
		"karmada_quota_bindings_unclassified",
		"karmada_quota_bindings_waiting",
		"karmada_quota_bindings_waiting_oldest_timestamp_seconds",
		"karmada_quota_business_namespace_used",
		"karmada_quota_cluster_evicting",
		"karmada_quota_cluster_evicting_until_timestamp_seconds",
		"karmada_quota_cluster_hard",
		"karmada_quota_cluster_reserved",
		"karmada_quota_cluster_running",
		"karmada_quota_cluster_used",
		"karmada_quota_drift_repaired_total",
		"karmada_quota_first_recount_seconds",
		"karmada_quota_group_hard",
		"karmada_quota_group_reserved",
		"karmada_quota_group_used",
		"karmada_quota_hard",
		"karmada_quota_members_running_more",
		"karmada_quota_metadata_generation",
		"karmada_quota_reconcile_duration_seconds",
		"karmada_quota_reservations_expired_total",
		"karmada_quota_reservations_settled_total",
		"karmada_quota_reserved",
		"karmada_quota_status_observed_generation",
		"karmada_quota_status_ready",
		"karmada_quota_status_write_conflicts_total",
		"karmada_quota_used",
		"karmada_quota_webhook_ca_bundle_updates_total",
		"karmada_quota_webhook_certificate_expiration_timestamp_seconds",
		"karmada_quota_webhook_certificate_renewals_total",
	}
)

type fakeQuotas []QuotaSnapshot

func (f fakeQuotas) Snapshots() []QuotaSnapshot { return f }

type fakeStoredQuotas []StoredQuota

func (f fakeStoredQuotas) StoredQuotas() []StoredQuota { return f }

// teamQuota is one quota as the leader exports it: two limits, one member cluster running more than charged,
// a failover from another keeping part of its usage there for a while, one binding waiting; member1 has a limit
// of its own, and member1 and member2 form the group eu.
var teamQuota = QuotaSnapshot{
	Namespace: "team-a", Name: "team",
	Hard:                  map[string]float64{"cpu": 10, "pods": 20},
	Used:                  map[string]float64{"cpu": 2, "pods": 4},
	Reserved:              map[string]float64{"cpu": 0.5, "pods": 1},
	Clusters:              map[string]map[string]float64{"member1": {"cpu": 1.5, "pods": 3}, "member2": {"cpu": 0.5, "pods": 1}},
	ClustersRunning:       map[string]map[string]float64{"member1": {"cpu": 2.5, "pods": 4}},
	ClustersEvicting:      map[string]map[string]float64{"member2": {"cpu": 0.5, "pods": 1}},
	ClustersEvictingUntil: map[string]time.Time{"member2": time.Unix(1700000600, 0)},
	MembersRunningMore:    ptr.To(1.0),
	Waiting:               1,
	OldestWaiting:         time.Unix(1700000000, 0),
	ClustersHard:          map[string]map[string]float64{"member1": {"cpu": 2}},
	ClustersReserved:      map[string]map[string]float64{"member1": {"cpu": 0.5}},
	Groups: map[string]GroupSnapshot{
		"eu": {Hard: map[string]float64{"cpu": 3}, Used: map[string]float64{"cpu": 2}, Reserved: map[string]float64{"cpu": 0.5}},
	},
}

// shopQuota is a KarmadaBusinessQuota as the leader exports it: cluster-scoped (no namespace), limiting cpu and pods
// over the namespaces shop-dev and shop-prod together, shop-dev running no pods.
var shopQuota = QuotaSnapshot{
	Name:     "shop",
	Hard:     map[string]float64{"cpu": 10, "pods": 20},
	Used:     map[string]float64{"cpu": 5, "pods": 3},
	Reserved: map[string]float64{"cpu": 1, "pods": 0},
	Clusters: map[string]map[string]float64{"member1": {"cpu": 5, "pods": 3}},
	Namespaces: map[string]map[string]float64{
		"shop-dev":  {"cpu": 2, "pods": 0},
		"shop-prod": {"cpu": 3, "pods": 3},
	},
}

// webhookRegistry is what quota-webhook serves on /metrics, karmada_quota_* only: its registration alone, as the
// binary does it, before any request.
func webhookRegistry(t *testing.T) prometheus.Gatherer {
	t.Helper()
	reg := prometheus.NewRegistry()
	registerWebhook(reg)
	return reg
}

// controllerRegistry is what quota-controller serves on /metrics (Handler), karmada_quota_* only: RegisterController
// into controller-runtime's registry, as the binary does it, with a quota and a certificate known so that every
// family it can export shows. Nothing else in this package's tests registers there.
func controllerRegistry(t *testing.T) prometheus.Gatherer {
	t.Helper()
	RegisterController()
	SetQuotaSource(fakeQuotas{teamQuota, shopQuota})
	SetStoredQuotaSource(fakeStoredQuotas{{Namespace: "team-a", Name: "team", Generation: 2, ObservedGeneration: 2, Ready: true}})
	t.Cleanup(func() {
		SetQuotaSource(nil)
		SetStoredQuotaSource(nil)
	})
	ReportCertificateExpiration(ServingCertificate, time.Unix(1800000000, 0))
	CertificateRenewed(ServingCertificate)
	FirstRecountDone(12 * time.Second)
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		families, err := served(t, Handler(ctrlmetrics.Registry)).Gather()
		var ours []*dto.MetricFamily
		for _, f := range families {
			if strings.HasPrefix(f.GetName(), namespace+"_") {
				ours = append(ours, f)
			}
		}
		return ours, err
	})
}

func familyNames(t *testing.T, g prometheus.Gatherer) []string {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	sort.Strings(names)
	return names
}

// TestEachBinaryExportsItsOwnSeries checks the exact karmada_quota_* families of each binary: the webhook no longer
// exports the controller's counters stuck at zero, and a new metric cannot leak into the wrong binary.
func TestEachBinaryExportsItsOwnSeries(t *testing.T) {
	if diff := cmp.Diff(webhookFamilies, familyNames(t, webhookRegistry(t))); diff != "" {
		t.Errorf("quota-webhook's families (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(controllerFamilies, familyNames(t, controllerRegistry(t))); diff != "" {
		t.Errorf("quota-controller's families (-want +got):\n%s", diff)
	}
}

// TestSeriesAtZeroFromTheStart: a webhook exports its admissions and conflicts at zero before its first request
// (KarmadaQuotaWebhookDown takes their absence as the webhook being down), and each binary its own writer label
// only.
func TestSeriesAtZeroFromTheStart(t *testing.T) {
	families, err := webhookRegistry(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		switch f.GetName() {
		case "karmada_quota_admission_requests_total", "karmada_quota_status_write_conflicts_total":
			for _, m := range f.GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				got = append(got, f.GetName()+"{"+strings.Join(labels, ",")+"}")
			}
		}
	}
	sort.Strings(got)
	want := []string{
		"karmada_quota_admission_requests_total{kind=KarmadaQuota,operation=CREATE,reason=,result=allowed}",
		"karmada_quota_admission_requests_total{kind=KarmadaQuota,operation=UPDATE,reason=,result=allowed}",
		"karmada_quota_admission_requests_total{kind=ResourceBinding,operation=CREATE,reason=,result=allowed}",
		"karmada_quota_admission_requests_total{kind=ResourceBinding,operation=UPDATE,reason=,result=allowed}",
		"karmada_quota_admission_requests_total{kind=ResourceTemplate,operation=UPDATE,reason=,result=allowed}",
		"karmada_quota_admission_requests_total{kind=Work,operation=CREATE,reason=,result=allowed}",
		"karmada_quota_admission_requests_total{kind=Work,operation=UPDATE,reason=,result=allowed}",
		"karmada_quota_status_write_conflicts_total{writer=webhook}",
	}
	// The controller's writer label is created by the controller's registration, which another test of this
	// package may have run in this process; the webhook's own registry must hold at least the webhook's.
	got = without(got, "karmada_quota_status_write_conflicts_total{writer=controller}")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series at zero (-want +got):\n%s", diff)
	}
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// TestRegisterTwice: a process running both the webhook and the controller registers their shared series once,
// without a panic; a different collector under a taken name still fails loudly.
func TestRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	registerWebhook(reg)
	registerController(reg)
	registerWebhook(reg)

	clash := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "reservations_written_total", Help: "Another."})
	defer func() {
		if recover() == nil {
			t.Error("registering another collector under a taken name did not panic")
		}
	}()
	register(reg, clash)
}

func TestQuotaSeries(t *testing.T) {
	idle := teamQuota
	idle.Name, idle.Waiting, idle.OldestWaiting = "idle", 0, time.Time{}
	idle.Clusters, idle.ClustersRunning, idle.MembersRunningMore = nil, nil, nil
	idle.ClustersEvicting, idle.ClustersEvictingUntil = nil, nil
	idle.ClustersHard, idle.ClustersReserved, idle.Groups = nil, nil, nil
	// Its eviction is held until released (purgeMode Never): no end to export.
	scoped := teamQuota
	scoped.Name, scoped.Unclassified, scoped.ClustersEvictingUntil = "scoped", 2, nil
	want := `
# HELP karmada_quota_bindings_unclassified Bindings of a PriorityClass-scoped quota's namespace whose priority class could not be read, as of the last recount: the quota does not count them.
# TYPE karmada_quota_bindings_unclassified gauge
karmada_quota_bindings_unclassified{namespace="team-a",quota="idle"} 0
karmada_quota_bindings_unclassified{namespace="team-a",quota="scoped"} 2
karmada_quota_bindings_unclassified{namespace="team-a",quota="team"} 0
# HELP karmada_quota_bindings_waiting Bindings of the quota's namespace waiting with Scheduled=False, QuotaExceeded that still need something this quota limits, as of the last recount.
# TYPE karmada_quota_bindings_waiting gauge
karmada_quota_bindings_waiting{namespace="team-a",quota="idle"} 0
karmada_quota_bindings_waiting{namespace="team-a",quota="scoped"} 1
karmada_quota_bindings_waiting{namespace="team-a",quota="team"} 1
# HELP karmada_quota_bindings_waiting_oldest_timestamp_seconds When the longest-waiting binding counted in bindings_waiting was refused (its Scheduled condition's lastTransitionTime), as Unix time. Absent when none waits.
# TYPE karmada_quota_bindings_waiting_oldest_timestamp_seconds gauge
karmada_quota_bindings_waiting_oldest_timestamp_seconds{namespace="team-a",quota="scoped"} 1.7e+09
karmada_quota_bindings_waiting_oldest_timestamp_seconds{namespace="team-a",quota="team"} 1.7e+09
# HELP karmada_quota_cluster_evicting The part of cluster_used that runs in one member cluster only until Karmada's graceful eviction from it ends (a failover keeps what it moved away until the replacement is healthy or the grace period ends), in base units. Absent where nothing is evicted.
# TYPE karmada_quota_cluster_evicting gauge
karmada_quota_cluster_evicting{cluster="member2",namespace="team-a",quota="scoped",resource="cpu"} 0.5
karmada_quota_cluster_evicting{cluster="member2",namespace="team-a",quota="scoped",resource="pods"} 1
karmada_quota_cluster_evicting{cluster="member2",namespace="team-a",quota="team",resource="cpu"} 0.5
karmada_quota_cluster_evicting{cluster="member2",namespace="team-a",quota="team",resource="pods"} 1
# HELP karmada_quota_cluster_evicting_until_timestamp_seconds When the last of what cluster_evicting counts in one member cluster goes at the latest, as Unix time. Absent while one of them is held until released (purgeMode Never), and where nothing is evicted.
# TYPE karmada_quota_cluster_evicting_until_timestamp_seconds gauge
karmada_quota_cluster_evicting_until_timestamp_seconds{cluster="member2",namespace="team-a",quota="team"} 1.7000006e+09
# HELP karmada_quota_cluster_hard Hard limit of a quota in one member cluster (spec.clusters), in base units. Absent for a cluster without a limit of its own.
# TYPE karmada_quota_cluster_hard gauge
karmada_quota_cluster_hard{cluster="member1",namespace="team-a",quota="scoped",resource="cpu"} 2
karmada_quota_cluster_hard{cluster="member1",namespace="team-a",quota="team",resource="cpu"} 2
# HELP karmada_quota_cluster_reserved Admitted but not yet observed usage against a quota in one member cluster, for the resources a cluster or group limit counts, in base units.
# TYPE karmada_quota_cluster_reserved gauge
karmada_quota_cluster_reserved{cluster="member1",namespace="team-a",quota="scoped",resource="cpu"} 0.5
karmada_quota_cluster_reserved{cluster="member1",namespace="team-a",quota="team",resource="cpu"} 0.5
# HELP karmada_quota_cluster_running What the pods of a quota's namespace request in one member cluster, read from the member, in base units: above cluster_used, the member runs more than the quota charges.
# TYPE karmada_quota_cluster_running gauge
karmada_quota_cluster_running{cluster="member1",namespace="team-a",quota="scoped",resource="cpu"} 2.5
karmada_quota_cluster_running{cluster="member1",namespace="team-a",quota="scoped",resource="pods"} 4
karmada_quota_cluster_running{cluster="member1",namespace="team-a",quota="team",resource="cpu"} 2.5
karmada_quota_cluster_running{cluster="member1",namespace="team-a",quota="team",resource="pods"} 4
# HELP karmada_quota_cluster_used Observed usage against a quota in one member cluster, in base units.
# TYPE karmada_quota_cluster_used gauge
karmada_quota_cluster_used{cluster="member1",namespace="team-a",quota="scoped",resource="cpu"} 1.5
karmada_quota_cluster_used{cluster="member1",namespace="team-a",quota="scoped",resource="pods"} 3
karmada_quota_cluster_used{cluster="member1",namespace="team-a",quota="team",resource="cpu"} 1.5
karmada_quota_cluster_used{cluster="member1",namespace="team-a",quota="team",resource="pods"} 3
karmada_quota_cluster_used{cluster="member2",namespace="team-a",quota="scoped",resource="cpu"} 0.5
karmada_quota_cluster_used{cluster="member2",namespace="team-a",quota="scoped",resource="pods"} 1
karmada_quota_cluster_used{cluster="member2",namespace="team-a",quota="team",resource="cpu"} 0.5
karmada_quota_cluster_used{cluster="member2",namespace="team-a",quota="team",resource="pods"} 1
# HELP karmada_quota_group_hard Hard limit of a quota in one group of member clusters (spec.clusterGroups), over the clusters it selects together, in base units.
# TYPE karmada_quota_group_hard gauge
karmada_quota_group_hard{group="eu",namespace="team-a",quota="scoped",resource="cpu"} 3
karmada_quota_group_hard{group="eu",namespace="team-a",quota="team",resource="cpu"} 3
# HELP karmada_quota_group_reserved Admitted but not yet observed usage against a quota in one group of member clusters, summed over the clusters it selects now, in base units.
# TYPE karmada_quota_group_reserved gauge
karmada_quota_group_reserved{group="eu",namespace="team-a",quota="scoped",resource="cpu"} 0.5
karmada_quota_group_reserved{group="eu",namespace="team-a",quota="team",resource="cpu"} 0.5
# HELP karmada_quota_group_used Observed usage against a quota in one group of member clusters, summed over the clusters it selects now, in base units.
# TYPE karmada_quota_group_used gauge
karmada_quota_group_used{group="eu",namespace="team-a",quota="scoped",resource="cpu"} 2
karmada_quota_group_used{group="eu",namespace="team-a",quota="team",resource="cpu"} 2
# HELP karmada_quota_hard Hard limit of a quota, in base units.
# TYPE karmada_quota_hard gauge
karmada_quota_hard{namespace="team-a",quota="idle",resource="cpu"} 10
karmada_quota_hard{namespace="team-a",quota="idle",resource="pods"} 20
karmada_quota_hard{namespace="team-a",quota="scoped",resource="cpu"} 10
karmada_quota_hard{namespace="team-a",quota="scoped",resource="pods"} 20
karmada_quota_hard{namespace="team-a",quota="team",resource="cpu"} 10
karmada_quota_hard{namespace="team-a",quota="team",resource="pods"} 20
# HELP karmada_quota_members_running_more 1 while some member cluster has run more than a quota charges there for longer than the controller's grace (its MembersWithinQuota condition is False), 0 while not. Absent while the members are not read.
# TYPE karmada_quota_members_running_more gauge
karmada_quota_members_running_more{namespace="team-a",quota="scoped"} 1
karmada_quota_members_running_more{namespace="team-a",quota="team"} 1
`
	if err := testutil.GatherAndCompare(written(t, fakeQuotas{teamQuota, idle, scoped}, nil), strings.NewReader(want),
		"karmada_quota_bindings_unclassified", "karmada_quota_bindings_waiting", "karmada_quota_bindings_waiting_oldest_timestamp_seconds",
		"karmada_quota_cluster_evicting", "karmada_quota_cluster_evicting_until_timestamp_seconds",
		"karmada_quota_cluster_hard", "karmada_quota_cluster_reserved", "karmada_quota_cluster_running", "karmada_quota_cluster_used",
		"karmada_quota_group_hard", "karmada_quota_group_reserved", "karmada_quota_group_used",
		"karmada_quota_hard", "karmada_quota_members_running_more"); err != nil {
		t.Error(err)
	}

	// A process whose controller never set a source (or a standby) exports nothing.
	if n, err := testutil.GatherAndCount(written(t, nil, nil)); err != nil || n != 0 {
		t.Errorf("a scrape without snapshots exported %d series (%v), want none", n, err)
	}
}

// TestQuotaSeriesBusinessQuota: a business quota's series are the quota families' with its name and an empty
// namespace (Prometheus stores it as no namespace label), beside the KarmadaQuotas' and apart from them; what each of
// its namespaces uses is business_namespace_used, labelled with that namespace. A KarmadaQuota exports none of the
// latter, and a namespace gone from the snapshot (the business no longer selects it) is gone from the scrape.
func TestQuotaSeriesBusinessQuota(t *testing.T) {
	want := `
# HELP karmada_quota_business_namespace_used Observed usage of one namespace a KarmadaBusinessQuota selects against that business quota (quota: the business quota's name; namespace: the selected namespace), in base units; every resource the quota limits, 0 included. Absent once the namespace leaves the business.
# TYPE karmada_quota_business_namespace_used gauge
karmada_quota_business_namespace_used{namespace="shop-dev",quota="shop",resource="cpu"} 2
karmada_quota_business_namespace_used{namespace="shop-dev",quota="shop",resource="pods"} 0
karmada_quota_business_namespace_used{namespace="shop-prod",quota="shop",resource="cpu"} 3
karmada_quota_business_namespace_used{namespace="shop-prod",quota="shop",resource="pods"} 3
# HELP karmada_quota_bindings_waiting Bindings of the quota's namespace waiting with Scheduled=False, QuotaExceeded that still need something this quota limits, as of the last recount.
# TYPE karmada_quota_bindings_waiting gauge
karmada_quota_bindings_waiting{namespace="",quota="shop"} 0
karmada_quota_bindings_waiting{namespace="team-a",quota="team"} 1
# HELP karmada_quota_cluster_used Observed usage against a quota in one member cluster, in base units.
# TYPE karmada_quota_cluster_used gauge
karmada_quota_cluster_used{cluster="member1",namespace="",quota="shop",resource="cpu"} 5
karmada_quota_cluster_used{cluster="member1",namespace="",quota="shop",resource="pods"} 3
karmada_quota_cluster_used{cluster="member1",namespace="team-a",quota="team",resource="cpu"} 1.5
karmada_quota_cluster_used{cluster="member1",namespace="team-a",quota="team",resource="pods"} 3
karmada_quota_cluster_used{cluster="member2",namespace="team-a",quota="team",resource="cpu"} 0.5
karmada_quota_cluster_used{cluster="member2",namespace="team-a",quota="team",resource="pods"} 1
# HELP karmada_quota_hard Hard limit of a quota, in base units.
# TYPE karmada_quota_hard gauge
karmada_quota_hard{namespace="",quota="shop",resource="cpu"} 10
karmada_quota_hard{namespace="",quota="shop",resource="pods"} 20
karmada_quota_hard{namespace="team-a",quota="team",resource="cpu"} 10
karmada_quota_hard{namespace="team-a",quota="team",resource="pods"} 20
# HELP karmada_quota_reserved Admitted but not yet observed usage against a quota, in base units.
# TYPE karmada_quota_reserved gauge
karmada_quota_reserved{namespace="",quota="shop",resource="cpu"} 1
karmada_quota_reserved{namespace="",quota="shop",resource="pods"} 0
karmada_quota_reserved{namespace="team-a",quota="team",resource="cpu"} 0.5
karmada_quota_reserved{namespace="team-a",quota="team",resource="pods"} 1
# HELP karmada_quota_used Observed usage against a quota, in base units.
# TYPE karmada_quota_used gauge
karmada_quota_used{namespace="",quota="shop",resource="cpu"} 5
karmada_quota_used{namespace="",quota="shop",resource="pods"} 3
karmada_quota_used{namespace="team-a",quota="team",resource="cpu"} 2
karmada_quota_used{namespace="team-a",quota="team",resource="pods"} 4
`
	families := []string{"karmada_quota_business_namespace_used", "karmada_quota_bindings_waiting", "karmada_quota_cluster_used",
		"karmada_quota_hard", "karmada_quota_reserved", "karmada_quota_used"}
	if err := testutil.GatherAndCompare(written(t, fakeQuotas{teamQuota, shopQuota}, nil), strings.NewReader(want), families...); err != nil {
		t.Error(err)
	}

	// shop-dev left the business: the next recount's snapshot no longer holds it, and neither does the scrape.
	left := shopQuota
	left.Namespaces = map[string]map[string]float64{"shop-prod": shopQuota.Namespaces["shop-prod"]}
	want = `
# HELP karmada_quota_business_namespace_used Observed usage of one namespace a KarmadaBusinessQuota selects against that business quota (quota: the business quota's name; namespace: the selected namespace), in base units; every resource the quota limits, 0 included. Absent once the namespace leaves the business.
# TYPE karmada_quota_business_namespace_used gauge
karmada_quota_business_namespace_used{namespace="shop-prod",quota="shop",resource="cpu"} 3
karmada_quota_business_namespace_used{namespace="shop-prod",quota="shop",resource="pods"} 3
`
	if err := testutil.GatherAndCompare(written(t, fakeQuotas{teamQuota, left}, nil), strings.NewReader(want), "karmada_quota_business_namespace_used"); err != nil {
		t.Error(err)
	}

	// The business quota deleted (forgotten): none of its series, and no namespace parts, are left.
	if n, err := testutil.GatherAndCount(written(t, fakeQuotas{teamQuota}, nil), "karmada_quota_business_namespace_used"); err != nil || n != 0 {
		t.Errorf("business_namespace_used exported %d series without a business quota (%v), want none", n, err)
	}
}

// TestSetNamespace: a namespace of a business quota exports every resource of the quota's hard, 0 included, whether
// it uses anything or not, and the map handed in is not changed.
func TestSetNamespace(t *testing.T) {
	s := QuotaSnapshot{Hard: map[string]float64{"cpu": 10, "pods": 20}}
	used := map[string]float64{"cpu": 2}
	s.SetNamespace("shop-dev", used)
	s.SetNamespace("shop-empty", nil)
	want := QuotaSnapshot{
		Hard: map[string]float64{"cpu": 10, "pods": 20},
		Namespaces: map[string]map[string]float64{
			"shop-dev":   {"cpu": 2, "pods": 0},
			"shop-empty": {"cpu": 0, "pods": 0},
		},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("SetNamespace (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"cpu": 2}, used); diff != "" {
		t.Errorf("SetNamespace changed the map it was given (-want +got):\n%s", diff)
	}
}

// TestSetClusterEvicting: the controller's way of filling a snapshot from status.clusters[]: a cluster nothing is
// evicted from adds nothing, one held until released (no evictingUntil) adds no end; a cluster some of which is
// evicted keeps its zeros, as cluster_used does.
func TestSetClusterEvicting(t *testing.T) {
	var s QuotaSnapshot
	until := time.Unix(1700000600, 0)
	s.SetClusterEvicting("member1", map[string]float64{}, until)
	s.SetClusterEvicting("member2", nil, time.Time{})
	// Keys mirror spec.hard: zeros alone are nothing evicted.
	s.SetClusterEvicting("member4", map[string]float64{"cpu": 0, "pods": 0}, time.Time{})
	if s.ClustersEvicting != nil || s.ClustersEvictingUntil != nil {
		t.Fatalf("nothing evicting recorded %v, %v; want nothing", s.ClustersEvicting, s.ClustersEvictingUntil)
	}
	s.SetClusterEvicting("member1", map[string]float64{"cpu": 0.5, "pods": 1}, until)
	s.SetClusterEvicting("member3", map[string]float64{"cpu": 0, "pods": 2}, time.Time{})
	want := QuotaSnapshot{
		ClustersEvicting:      map[string]map[string]float64{"member1": {"cpu": 0.5, "pods": 1}, "member3": {"cpu": 0, "pods": 2}},
		ClustersEvictingUntil: map[string]time.Time{"member1": until},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("SetClusterEvicting (-want +got):\n%s", diff)
	}
}

// TestSetClusterLimit: the controller's way of filling a snapshot from status.clusters[] with cluster limits. A
// limited cluster exports used and reserved for every resource of its limit, 0 included, whether anything is used
// or reserved there or not (member3 has not joined); a cluster without a limit of its own exports a reservation
// above zero only (status.clusters[].reserved of a cluster some group counts), and no hard.
func TestSetClusterLimit(t *testing.T) {
	s := QuotaSnapshot{Clusters: map[string]map[string]float64{
		"member1": {"cpu": 1.5, "pods": 3},
		"member2": {"cpu": 0.5},
		"member3": {},
		"member4": {"cpu": 1},
	}}
	s.SetClusterLimit("member1", map[string]float64{"cpu": 2, "requests.memory": 4096}, map[string]float64{"cpu": 0.25})
	s.SetClusterLimit("member2", map[string]float64{}, map[string]float64{"cpu": 0.5})
	s.SetClusterLimit("member3", map[string]float64{"cpu": 1}, map[string]float64{})
	s.SetClusterLimit("member4", nil, map[string]float64{"cpu": 0})
	want := QuotaSnapshot{
		Clusters: map[string]map[string]float64{
			"member1": {"cpu": 1.5, "pods": 3, "requests.memory": 0},
			"member2": {"cpu": 0.5},
			"member3": {"cpu": 0},
			"member4": {"cpu": 1},
		},
		ClustersHard: map[string]map[string]float64{"member1": {"cpu": 2, "requests.memory": 4096}, "member3": {"cpu": 1}},
		ClustersReserved: map[string]map[string]float64{
			"member1": {"cpu": 0.25, "requests.memory": 0},
			"member2": {"cpu": 0.5},
			"member3": {"cpu": 0},
		},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("SetClusterLimit (-want +got):\n%s", diff)
	}
}

// TestSetGroup: a group exports used and reserved for every resource of its limit, 0 included, even while it
// selects no cluster.
func TestSetGroup(t *testing.T) {
	var s QuotaSnapshot
	s.SetGroup("eu", map[string]float64{"cpu": 3, "pods": 10}, map[string]float64{"cpu": 2}, nil)
	s.SetGroup("empty", map[string]float64{"cpu": 1}, nil, nil)
	want := QuotaSnapshot{Groups: map[string]GroupSnapshot{
		"eu": {Hard: map[string]float64{"cpu": 3, "pods": 10}, Used: map[string]float64{"cpu": 2, "pods": 0},
			Reserved: map[string]float64{"cpu": 0, "pods": 0}},
		"empty": {Hard: map[string]float64{"cpu": 1}, Used: map[string]float64{"cpu": 0}, Reserved: map[string]float64{"cpu": 0}},
	}}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("SetGroup (-want +got):\n%s", diff)
	}
}

func TestStoredQuotaSeries(t *testing.T) {
	stored := fakeStoredQuotas{
		{Namespace: "team-a", Name: "invalid", Generation: 3, ObservedGeneration: 1},
		{Namespace: "team-a", Name: "current", Generation: 2, ObservedGeneration: 2, Ready: true},
	}
	want := `
# HELP karmada_quota_metadata_generation metadata.generation of a quota, as this controller replica's cache holds it.
# TYPE karmada_quota_metadata_generation gauge
karmada_quota_metadata_generation{namespace="team-a",quota="current"} 2
karmada_quota_metadata_generation{namespace="team-a",quota="invalid"} 3
# HELP karmada_quota_status_observed_generation status.observedGeneration of a quota, as this controller replica's cache holds it; behind metadata_generation while a spec change is not counted yet.
# TYPE karmada_quota_status_observed_generation gauge
karmada_quota_status_observed_generation{namespace="team-a",quota="current"} 2
karmada_quota_status_observed_generation{namespace="team-a",quota="invalid"} 1
# HELP karmada_quota_status_ready 1 when a quota's Ready condition is True, else 0, as this controller replica's cache holds it.
# TYPE karmada_quota_status_ready gauge
karmada_quota_status_ready{namespace="team-a",quota="current"} 1
karmada_quota_status_ready{namespace="team-a",quota="invalid"} 0
`
	if err := testutil.GatherAndCompare(written(t, nil, stored), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(written(t, nil, nil)); err != nil || n != 0 {
		t.Errorf("a scrape without stored quotas exported %d series (%v), want none", n, err)
	}
}

func TestHelpers(t *testing.T) {
	requests := AdmissionRequests.WithLabelValues(KindResourceBinding, "UPDATE", ResultDenied, "QuotaExceeded")
	// Gone afterwards: the other tests read the series a webhook exports from its start.
	t.Cleanup(func() {
		AdmissionRequests.DeleteLabelValues(KindResourceBinding, "UPDATE", ResultDenied, "QuotaExceeded")
	})
	decisions := AdmissionDuration.WithLabelValues(KindResourceBinding, "UPDATE").(prometheus.Histogram)
	before, beforeCount := testutil.ToFloat64(requests), sampleCount(t, decisions)
	ObserveAdmission(KindResourceBinding, "UPDATE", ResultDenied, "QuotaExceeded", 20*time.Millisecond)
	if got := testutil.ToFloat64(requests) - before; got != 1 {
		t.Errorf("admission requests grew by %v, want 1", got)
	}
	if got := sampleCount(t, decisions) - beforeCount; got != 1 {
		t.Errorf("admission durations grew by %v, want 1", got)
	}

	conflicts := StatusConflicts.WithLabelValues(WriterController)
	before = testutil.ToFloat64(conflicts)
	StatusWriteConflict(WriterController)
	if got := testutil.ToFloat64(conflicts) - before; got != 1 {
		t.Errorf("controller conflicts grew by %v, want 1", got)
	}
}

func sampleCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
