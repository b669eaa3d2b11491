package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/proc"
)

// statusWriters is how many writers write at once, each its own object, as the webhook and the controller write
// the quotas of many namespaces in the spread workload (docs/performance.md).
const statusWriters = 64

// schemalessGroup serves a copy of the KarmadaQuota CRD whose status has no schema, to tell what validating and
// tracking the schema costs from what writing an object of that size costs.
const schemalessGroup = "schemaless.bench.karmada.io"

// BenchmarkStatusWrite measures the kube-apiserver CPU one write costs, against a placement (the scheduler's
// ResourceBinding patch, with no webhook), each by 64 concurrent writers on objects of their own: a quota's ledger,
// which the webhook writes per admission that adds usage and the controller per settle (three reservations, usage
// observed), without and with limits on both members and their group, and the same on a copy of the CRD whose
// reservations are one string each; and a quota's status as the controller
// writes it at most once per status interval (the spread workload's: used and reserved in all and on two members,
// a condition, two field managers), the same with limits on members, under one field manager name, without a
// status schema, and a status of hard and used alone. `make bench-status-write` runs it.
func BenchmarkStatusWrite(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := b.TempDir()
	reg, err := proc.NewRegistry(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	cp, err := Start(ctx, reg, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			b.Error(err)
		}
	}()
	if err := installSchemaless(ctx, cp.Client); err != nil {
		b.Fatal(err)
	}

	// Objects are made before b.Run, which calls its function again for every b.N it tries.
	bindings := make([]*workv1alpha2.ResourceBinding, statusWriters)
	for i := range bindings {
		// As Karmada's detector creates it for a Deployment, unplaced.
		rb, err := testenv.CreateBinding(ctx, cp.Client, utiltesting.MakeBinding(namespace(ctx, b, cp, "placement", i), "web-deployment").
			Replicas(2).Requests(utiltesting.List("cpu", "500m", "memory", "64Mi")))
		must(b, err)
		bindings[i] = rb
	}
	b.Run("placement", func(b *testing.B) {
		measure(b, cp, func(i, n int) error {
			patch := fmt.Sprintf(`{"spec":{"clusters":[{"name":"member1","replicas":%d}]}}`, 1+n%2)
			return cp.Client.Patch(ctx, bindings[i], client.RawPatch(types.MergePatchType, []byte(patch)))
		})
	})
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	// The webhook and the controller write a quota's status under their own field manager names.
	bothWriters := []string{"quota-webhook", "quota-controller"}
	for k, shape := range []struct {
		name          string
		group         string
		full          bool
		clusterLimits bool
		owners        []string
	}{
		{"quota status", quotav1alpha1.GroupVersion.Group, true, false, bothWriters},
		{"quota status with cluster limits", quotav1alpha1.GroupVersion.Group, true, true, bothWriters},
		{"quota status by one field manager", quotav1alpha1.GroupVersion.Group, true, false, []string{"karmada-quota"}},
		{"quota status without a status schema", schemalessGroup, true, false, bothWriters},
		{"quota status of hard and used alone", quotav1alpha1.GroupVersion.Group, false, false, bothWriters},
	} {
		quotas := make([]*unstructured.Unstructured, statusWriters)
		for i := range quotas {
			q := testenv.Quota(namespace(ctx, b, cp, "status", i), fmt.Sprintf("team-%d", k), utiltesting.List("cpu", "100", "memory", "100Gi"))
			if shape.clusterLimits {
				limitClusters(q)
			}
			u := toUnstructured(b, q, shape.group)
			must(b, cp.Client.Create(ctx, u))
			q.Status = spreadStatus(q.Spec.Hard, shape.full, now)
			if shape.clusterLimits {
				q.Status = clusterLimitedStatus(q.Status)
			}
			must(b, unstructured.SetNestedField(u.Object, toUnstructured(b, q, shape.group).Object["status"], "status"))
			must(b, cp.Client.Status().Update(ctx, u, client.FieldOwner(shape.owners[len(shape.owners)-1])))
			quotas[i] = u
		}
		b.Run(shape.name, func(b *testing.B) {
			measure(b, cp, func(i, n int) error {
				u := quotas[i]
				q := &quotav1alpha1.KarmadaQuota{}
				if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, q); err != nil {
					return err
				}
				// What each write changes: the counts, as a recount moves them.
				q.Status.Used = utiltesting.List("cpu", fmt.Sprint(n%100), "memory", "1Gi")
				if shape.full {
					q.Status.Reserved = utiltesting.List("cpu", fmt.Sprint(n%7), "memory", "384Mi")
				}
				m, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(q)
				if err != nil {
					return err
				}
				if err := unstructured.SetNestedField(u.Object, m["status"], "status"); err != nil {
					return err
				}
				// Alternate writers, as the webhook and the controller alternate on a quota.
				owner := shape.owners[n%len(shape.owners)]
				return cp.Client.Status().Update(ctx, u, client.FieldOwner(owner))
			})
			raw, err := json.Marshal(quotas[0].Object)
			must(b, err)
			b.ReportMetric(float64(len(raw)), "object-bytes")
		})
	}

	// What an admission writes since the reservations moved out of the quota: its ledger, as spread leaves it
	// (three reservations, usage observed), one reservation replaced per write, alternately by the webhook and the
	// controller; then with limits on both members and their group (each reservation split by cluster, usage
	// observed on each member). Each reservation and each cluster's usage is one string, as karmada-quota writes
	// them; the same ledgers with each an object, as releases before wrote them (what the apiserver spends per
	// field, against what it spends per byte: docs/performance.md); and on a copy of the CRD that takes strings only
	// there, the schema a release could narrow to once no ledger holds objects (what serving both forms costs).
	if err := installStringsOnlyLedger(ctx, cp.Client); err != nil {
		b.Fatal(err)
	}
	for k, shape := range []struct {
		name          string
		form          reservationForm
		clusterLimits bool
	}{
		{"ledger", reservationStrings, false},
		{"ledger with cluster limits", reservationStrings, true},
		{"ledger with object reservations", reservationObjects, false},
		{"ledger with object reservations and cluster limits", reservationObjects, true},
		{"ledger under a strings-only schema", reservationStringsOnlySchema, false},
		{"ledger under a strings-only schema with cluster limits", reservationStringsOnlySchema, true},
	} {
		ledgers := make([]*unstructured.Unstructured, statusWriters)
		for i := range ledgers {
			q := testenv.Quota(namespace(ctx, b, cp, "status", i), fmt.Sprintf("ledger-%d", k), utiltesting.List("cpu", "100", "memory", "100Gi"))
			if shape.clusterLimits {
				limitClusters(q)
			}
			must(b, cp.Client.Create(ctx, q))
			ledgers[i] = ledgerObject(b, spreadLedger(q, now, shape.clusterLimits), shape.form)
			must(b, cp.Client.Create(ctx, ledgers[i], client.FieldOwner(bothWriters[1])))
		}
		b.Run(shape.name, func(b *testing.B) {
			measure(b, cp, func(i, n int) error {
				u := ledgers[i]
				r := reservation(n, now)
				if shape.clusterLimits {
					r.Clusters = reservedOnClusters
				}
				entry, err := reservationEntry(r, shape.form)
				if err != nil {
					return err
				}
				list, _, err := unstructured.NestedSlice(u.Object, "reservations")
				if err != nil {
					return err
				}
				if err := unstructured.SetNestedSlice(u.Object, append(list[1:], entry), "reservations"); err != nil {
					return err
				}
				return cp.Client.Update(ctx, u, client.FieldOwner(bothWriters[n%len(bothWriters)]))
			})
			raw, err := json.Marshal(ledgers[0].Object)
			must(b, err)
			b.ReportMetric(float64(len(raw)), "object-bytes")
		})
	}
}

// reservationForm is how the status-write benchmark stores a ledger's reservations and each cluster's observed usage.
type reservationForm int

const (
	// reservationStrings: one string each, as karmada-quota writes them.
	reservationStrings reservationForm = iota
	// reservationObjects: an object each, as releases before wrote them (the CRD still takes them).
	reservationObjects
	// reservationStringsOnlySchema: strings, on a copy of the CRD that takes nothing else (stringsOnlyGroup).
	reservationStringsOnlySchema
)

// stringsOnlyGroup serves a copy of the KarmadaQuotaLedger CRD whose reservations and observed cluster usages are
// strings only.
const stringsOnlyGroup = "strings.bench.karmada.io"

// installStringsOnlyLedger installs the KarmadaQuotaLedger CRD again in stringsOnlyGroup, its reservations and
// observed cluster usages strings only, and waits until it is served.
func installStringsOnlyLedger(ctx context.Context, c client.Client) error {
	return installCopy(ctx, c, "quota.karmada.io_karmadaquotaledgers.yaml", stringsOnlyGroup, func(v *apiextensionsv1.CustomResourceDefinitionVersion) {
		reservations := v.Schema.OpenAPIV3Schema.Properties["reservations"]
		reservations.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}
		v.Schema.OpenAPIV3Schema.Properties["reservations"] = reservations
		observed := v.Schema.OpenAPIV3Schema.Properties["observed"]
		clusters := observed.Properties["clusters"]
		clusters.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}
		observed.Properties["clusters"] = clusters
		v.Schema.OpenAPIV3Schema.Properties["observed"] = observed
	})
}

// ledgerObject is l as the object written, its reservations in form.
func ledgerObject(b *testing.B, l *quotav1alpha1.KarmadaQuotaLedger, form reservationForm) *unstructured.Unstructured {
	b.Helper()
	m, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(l)
	must(b, err)
	list := make([]any, 0, len(l.Reservations))
	for _, r := range l.Reservations {
		entry, err := reservationEntry(r, form)
		must(b, err)
		list = append(list, entry)
	}
	m["reservations"] = list
	if form == reservationObjects && l.Observed != nil && len(l.Observed.Clusters) > 0 {
		// As releases before wrote each cluster's observed usage too: an object each.
		clusters := make([]any, 0, len(l.Observed.Clusters))
		for _, c := range l.Observed.Clusters {
			type object quotav1alpha1.ClusterUsed
			o := object(c)
			entry, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(&o)
			must(b, err)
			clusters = append(clusters, entry)
		}
		must(b, unstructured.SetNestedSlice(m, clusters, "observed", "clusters"))
	}
	u := &unstructured.Unstructured{Object: m}
	group := quotav1alpha1.GroupVersion.Group
	if form == reservationStringsOnlySchema {
		group = stringsOnlyGroup
	}
	u.SetAPIVersion(group + "/" + quotav1alpha1.GroupVersion.Version)
	u.SetKind("KarmadaQuotaLedger")
	return u
}

// reservationEntry is r as an entry of the reservations list, in form.
func reservationEntry(r quotav1alpha1.Reservation, form reservationForm) (any, error) {
	if form != reservationObjects {
		return r.String(), nil
	}
	// The type without its methods, which write the string.
	type object quotav1alpha1.Reservation
	o := object(r)
	return apiruntime.DefaultUnstructuredConverter.ToUnstructured(&o)
}

// spreadLedger is q's ledger as the spread workload leaves it between writes: usage observed, three reservations
// the controller has not settled yet; with clusterLimits, split by member.
func spreadLedger(q *quotav1alpha1.KarmadaQuota, now metav1.Time, clusterLimits bool) *quotav1alpha1.KarmadaQuotaLedger {
	l := &quotav1alpha1.KarmadaQuotaLedger{
		ObjectMeta: metav1.ObjectMeta{Namespace: q.Namespace, Name: q.Name, OwnerReferences: quota.LedgerOwner(q)},
		LedgerState: quotav1alpha1.LedgerState{
			QuotaGeneration: q.Generation,
			Observed:        &quotav1alpha1.LedgerObserved{Used: utiltesting.List("cpu", "30", "memory", "30Gi")},
			Reservations:    []quotav1alpha1.Reservation{reservation(-1, now), reservation(-2, now), reservation(-3, now)},
		},
	}
	if clusterLimits {
		for i := range l.Reservations {
			l.Reservations[i].Clusters = reservedOnClusters
		}
		l.Observed.Clusters = []quotav1alpha1.ClusterUsed{
			{Name: "member1", Used: utiltesting.List("cpu", "15", "memory", "15Gi")},
			{Name: "member2", Used: utiltesting.List("cpu", "15", "memory", "15Gi")},
		}
	}
	l.ReservationCount = int32(len(l.Reservations))
	return l
}

// measure runs b.N writes by statusWriters concurrent writers, writer i on object i, and reports the CPU
// kube-apiserver and etcd spent per write.
func measure(b *testing.B, cp *ControlPlane, write func(i, n int) error) {
	b.Helper()
	apiserver, etcd := cp.PIDs["kube-apiserver"], cp.PIDs["etcd"]
	apiBefore, err := proc.CPUSeconds(apiserver)
	must(b, err)
	etcdBefore, err := proc.CPUSeconds(etcd)
	must(b, err)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	b.SetParallelism((statusWriters + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1)-1) % statusWriters
		for n := 0; pb.Next(); n++ {
			if err := write(i, n); err != nil {
				failed.CompareAndSwap(nil, &err)
				return
			}
		}
	})
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	apiAfter, err := proc.CPUSeconds(apiserver)
	must(b, err)
	etcdAfter, err := proc.CPUSeconds(etcd)
	must(b, err)
	b.ReportMetric((apiAfter-apiBefore)*1000/float64(b.N), "apiserver-ms/op")
	b.ReportMetric((etcdAfter-etcdBefore)*1000/float64(b.N), "etcd-ms/op")
}

// spreadStatus is a status as the controller writes it in the spread workload: usage and what is reserved, in all
// and on two members, Ready; or, without full, hard and used alone.
func spreadStatus(hard corev1.ResourceList, full bool, now metav1.Time) quotav1alpha1.KarmadaQuotaStatus {
	used := utiltesting.List("cpu", "30", "memory", "30Gi")
	if !full {
		return quotav1alpha1.KarmadaQuotaStatus{Hard: hard, Used: used}
	}
	return quotav1alpha1.KarmadaQuotaStatus{
		ObservedGeneration: 1,
		Hard:               hard,
		Used:               used,
		Reserved:           utiltesting.List("cpu", "3", "memory", "384Mi"),
		Clusters: []quotav1alpha1.ClusterUsage{
			{Name: "member1", Used: utiltesting.List("cpu", "15", "memory", "15Gi")},
			{Name: "member2", Used: utiltesting.List("cpu", "15", "memory", "15Gi")},
		},
		Summary: "cpu: 30/100, memory: 30Gi/100Gi",
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Current",
			Message: "status is current", LastTransitionTime: now}},
	}
}

// limitClusters limits the quota on each of the two members and on their group, as the benchmark's
// karmada-quota-cluster-limits configuration does (docs/performance.md).
func limitClusters(q *quotav1alpha1.KarmadaQuota) {
	half := utiltesting.List("cpu", "50", "memory", "50Gi")
	q.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: half}, {Name: "member2", Hard: half}}
	q.Spec.ClusterGroups = []quotav1alpha1.ClusterGroupLimit{{Name: "bench",
		ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "bench"}}, Hard: q.Spec.Hard}}
}

// reservedOnClusters is a spread reservation's arrival on each member: one replica on each.
var reservedOnClusters = []quotav1alpha1.ClusterReservation{
	{Name: "member1", Reserved: utiltesting.List("cpu", "500m", "memory", "64Mi")},
	{Name: "member2", Reserved: utiltesting.List("cpu", "500m", "memory", "64Mi")},
}

// clusterLimitedStatus is the spread status of a quota with limits on both members and their group: each cluster's
// and the group's hard, used and reserved.
func clusterLimitedStatus(status quotav1alpha1.KarmadaQuotaStatus) quotav1alpha1.KarmadaQuotaStatus {
	reserved := utiltesting.List("cpu", "1500m", "memory", "192Mi")
	for i := range status.Clusters {
		status.Clusters[i].Hard = utiltesting.List("cpu", "50", "memory", "50Gi")
		status.Clusters[i].Reserved = reserved
	}
	status.ClusterGroups = []quotav1alpha1.ClusterGroupUsage{{Name: "bench", Clusters: []string{"member1", "member2"},
		Hard: status.Hard, Used: status.Used, Reserved: utiltesting.List("cpu", "3", "memory", "384Mi")}}
	return status
}

func reservation(n int, now metav1.Time) quotav1alpha1.Reservation {
	return quotav1alpha1.Reservation{
		ReservedBy: quotav1alpha1.ReservationOwner{APIVersion: workv1alpha2.SchemeGroupVersion.String(), Kind: "ResourceBinding",
			Name: fmt.Sprintf("web-%d-deployment", n), UID: types.UID(fmt.Sprintf("6c3f3a52-0000-4000-8000-%012d", n&0xffffffff))},
		Generation:     2,
		Reserved:       utiltesting.List("cpu", "1", "memory", "128Mi"),
		ExpirationTime: now,
	}
}

func toUnstructured(b *testing.B, q *quotav1alpha1.KarmadaQuota, group string) *unstructured.Unstructured {
	b.Helper()
	m, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(q)
	must(b, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(group + "/" + quotav1alpha1.GroupVersion.Version)
	u.SetKind("KarmadaQuota")
	return u
}

// namespace creates the i-th namespace of a case, once.
func namespace(ctx context.Context, b *testing.B, cp *ControlPlane, prefix string, i int) string {
	b.Helper()
	name := fmt.Sprintf("%s-%d", prefix, i)
	err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	must(b, client.IgnoreAlreadyExists(err))
	return name
}

// installSchemaless installs the KarmadaQuota CRD again in schemalessGroup, with its status left unvalidated and
// untyped (x-kubernetes-preserve-unknown-fields), and waits until it is served.
func installSchemaless(ctx context.Context, c client.Client) error {
	return installCopy(ctx, c, "quota.karmada.io_karmadaquotas.yaml", schemalessGroup, func(v *apiextensionsv1.CustomResourceDefinitionVersion) {
		preserve := true
		v.Schema.OpenAPIV3Schema.Properties["status"] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}
	})
}

// installCopy installs the chart's CRD in file again in group, each version changed by change, and waits until
// it is served.
func installCopy(ctx context.Context, c client.Client, file, group string, change func(*apiextensionsv1.CustomResourceDefinitionVersion)) error {
	crd, err := testenv.ChartCRDInGroup(file, group)
	if err != nil {
		return err
	}
	for i := range crd.Spec.Versions {
		change(&crd.Spec.Versions[i])
	}
	if err := c.Create(ctx, crd); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func must(b *testing.B, errs ...error) {
	b.Helper()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}
