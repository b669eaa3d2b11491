package metrics

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// The per-quota series are written to a scrape straight from the leader's snapshots and the stored quotas
// (Handler), not collected through a prometheus.Registry: a registry builds a constant metric and then a protobuf
// message for every series at every scrape, and sorts them, which at 10,000 quotas (150,000 series) allocated 165
// MB in 2.5 million allocations per scrape (BenchmarkScrape), all of it garbage the collector had to make room for
// every scrape interval. Written here, a scrape allocates a sorted index of the quotas and its buffers.

// quotaFamily is one per-quota family: its name, and its help as Prometheus shows it.
type quotaFamily struct {
	name, help string
}

var (
	hardFamily     = quotaFamily{namespace + "_hard", "Hard limit of a quota, in base units."}
	usedFamily     = quotaFamily{namespace + "_used", "Observed usage against a quota, in base units."}
	reservedFamily = quotaFamily{namespace + "_reserved", "Admitted but not yet observed usage against a quota, in base units."}

	clusterUsedFamily    = quotaFamily{namespace + "_cluster_used", "Observed usage against a quota in one member cluster, in base units."}
	clusterRunningFamily = quotaFamily{namespace + "_cluster_running",
		"What the pods of a quota's namespace request in one member cluster, read from the member, in base units: above cluster_used, the member runs more than the quota charges."}
	clusterEvictingFamily = quotaFamily{namespace + "_cluster_evicting",
		"The part of cluster_used that runs in one member cluster only until Karmada's graceful eviction from it ends (a failover keeps what it moved away until the replacement is healthy or the grace period ends), in base units. Absent where nothing is evicted."}
	clusterEvictingUntilFamily = quotaFamily{namespace + "_cluster_evicting_until_timestamp_seconds",
		"When the last of what cluster_evicting counts in one member cluster goes at the latest, as Unix time. Absent while one of them is held until released (purgeMode Never), and where nothing is evicted."}
	clusterHardFamily = quotaFamily{namespace + "_cluster_hard",
		"Hard limit of a quota in one member cluster (spec.clusters), in base units. Absent for a cluster without a limit of its own."}
	clusterReservedFamily = quotaFamily{namespace + "_cluster_reserved",
		"Admitted but not yet observed usage against a quota in one member cluster, for the resources a cluster or group limit counts, in base units."}

	groupHardFamily = quotaFamily{namespace + "_group_hard",
		"Hard limit of a quota in one group of member clusters (spec.clusterGroups), over the clusters it selects together, in base units."}
	groupUsedFamily = quotaFamily{namespace + "_group_used",
		"Observed usage against a quota in one group of member clusters, summed over the clusters it selects now, in base units."}
	groupReservedFamily = quotaFamily{namespace + "_group_reserved",
		"Admitted but not yet observed usage against a quota in one group of member clusters, summed over the clusters it selects now, in base units."}

	waitingFamily = quotaFamily{namespace + "_bindings_waiting",
		"Bindings of the quota's namespace waiting with Scheduled=False, QuotaExceeded that still need something this quota limits, as of the last recount."}
	unclassifiedFamily = quotaFamily{namespace + "_bindings_unclassified",
		"Bindings of a PriorityClass-scoped quota's namespace whose priority class could not be read, as of the last recount: the quota does not count them."}
	membersRunningMoreFamily = quotaFamily{namespace + "_members_running_more",
		"1 while some member cluster has run more than a quota charges there for longer than the controller's grace (its MembersWithinQuota condition is False), 0 while not. Absent while the members are not read."}
	oldestWaitingFamily = quotaFamily{namespace + "_bindings_waiting_oldest_timestamp_seconds",
		"When the longest-waiting binding counted in bindings_waiting was refused (its Scheduled condition's lastTransitionTime), as Unix time. Absent when none waits."}
	businessNamespaceUsedFamily = quotaFamily{namespace + "_business_namespace_used",
		"Observed usage of one namespace a KarmadaBusinessQuota selects against that business quota (quota: the business quota's name; namespace: the selected namespace), in base units; every resource the quota limits, 0 included. Absent once the namespace leaves the business."}

	generationFamily = quotaFamily{namespace + "_metadata_generation",
		"metadata.generation of a quota, as this controller replica's cache holds it."}
	observedGenerationFamily = quotaFamily{namespace + "_status_observed_generation",
		"status.observedGeneration of a quota, as this controller replica's cache holds it; behind metadata_generation while a spec change is not counted yet."}
	readyFamily = quotaFamily{namespace + "_status_ready",
		"1 when a quota's Ready condition is True, else 0, as this controller replica's cache holds it."}
)

// quotaFamilies are the per-quota families, in the order a scrape writes them.
var quotaFamilies = []*quotaFamily{
	&hardFamily, &usedFamily, &reservedFamily,
	&clusterUsedFamily, &clusterRunningFamily, &clusterEvictingFamily, &clusterHardFamily, &clusterReservedFamily,
	&clusterEvictingUntilFamily, &groupHardFamily, &groupUsedFamily, &groupReservedFamily, &businessNamespaceUsedFamily,
	&waitingFamily, &unclassifiedFamily, &membersRunningMoreFamily, &oldestWaitingFamily,
	&generationFamily, &observedGenerationFamily, &readyFamily,
}

// sources are what the per-quota series export: the leader's snapshots (nil on a standby, or before the
// controller sets them) and the quotas as this replica's cache stores them.
var sources struct {
	mu     sync.RWMutex
	quotas QuotaSource
	stored StoredQuotaSource
}

// SetQuotaSource makes the quota gauges export what source knows, from the next scrape on.
func SetQuotaSource(source QuotaSource) {
	sources.mu.Lock()
	defer sources.mu.Unlock()
	sources.quotas = source
}

// SetStoredQuotaSource makes the stored-status gauges export what source holds, from the next scrape on.
func SetStoredQuotaSource(source StoredQuotaSource) {
	sources.mu.Lock()
	defer sources.mu.Unlock()
	sources.stored = source
}

// Handler serves what quota-controller exports on /metrics in Prometheus's text format: gatherer's families, then
// the per-quota series written straight from the sources, gzipped when the scraper accepts it (Prometheus always
// does). A gatherer that fails answers 500, as controller-runtime's handler does.
func Handler(gatherer prometheus.Gatherer) http.Handler {
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		families, err := gatherer.Gather()
		if err != nil {
			http.Error(w, "gathering metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", string(format))
		var out io.Writer = w
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzipWriters.Get().(*gzip.Writer)
			gz.Reset(w)
			defer func() {
				_ = gz.Close()
				gzipWriters.Put(gz)
			}()
			out = gz
		}
		buffered := bufio.NewWriterSize(out, 64<<10)
		encoder := expfmt.NewEncoder(buffered, format)
		for _, f := range families {
			if err := encoder.Encode(f); err != nil {
				return // the scraper went away
			}
		}
		sources.mu.RLock()
		quotas, stored := sources.quotas, sources.stored
		sources.mu.RUnlock()
		var snapshots []QuotaSnapshot
		if quotas != nil {
			snapshots = quotas.Snapshots()
		}
		var storedQuotas []StoredQuota
		if stored != nil {
			storedQuotas = stored.StoredQuotas()
		}
		writeQuotaSeries(buffered, snapshots, storedQuotas)
		_ = buffered.Flush()
	})
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// acceptsGzip reports whether an Accept-Encoding header lists gzip without refusing it (q=0).
func acceptsGzip(header string) bool {
	for _, coding := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(coding, ";")
		if strings.TrimSpace(name) != "gzip" {
			continue
		}
		q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !ok {
			return true
		}
		weight, err := strconv.ParseFloat(q, 64)
		return err == nil && weight > 0
	}
	return false
}

// writeQuotaSeries writes every per-quota family: each quota's in order of namespace and name, each map's in
// order of its keys, the labels of a series in order of their names (as client_golang writes them). A family with
// no series is left out.
func writeQuotaSeries(w io.Writer, snapshots []QuotaSnapshot, stored []StoredQuota) {
	s := &seriesWriter{w: w}
	order := make([]int, len(snapshots))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(snapshots[a].Namespace, snapshots[b].Namespace), strings.Compare(snapshots[a].Name, snapshots[b].Name))
	})
	each := func(f *quotaFamily, write func(q *QuotaSnapshot)) {
		s.begin(f)
		for _, i := range order {
			write(&snapshots[i])
		}
	}
	for _, f := range []struct {
		family *quotaFamily
		of     func(q *QuotaSnapshot) map[string]float64
	}{
		{&hardFamily, func(q *QuotaSnapshot) map[string]float64 { return q.Hard }},
		{&usedFamily, func(q *QuotaSnapshot) map[string]float64 { return q.Used }},
		{&reservedFamily, func(q *QuotaSnapshot) map[string]float64 { return q.Reserved }},
	} {
		each(f.family, func(q *QuotaSnapshot) {
			values := f.of(q)
			for _, resource := range s.sorted(values) {
				s.sample(values[resource], "namespace", q.Namespace, "quota", q.Name, "resource", resource)
			}
		})
	}
	for _, f := range []struct {
		family *quotaFamily
		of     func(q *QuotaSnapshot) map[string]map[string]float64
	}{
		{&clusterUsedFamily, func(q *QuotaSnapshot) map[string]map[string]float64 { return q.Clusters }},
		{&clusterRunningFamily, func(q *QuotaSnapshot) map[string]map[string]float64 { return q.ClustersRunning }},
		{&clusterEvictingFamily, func(q *QuotaSnapshot) map[string]map[string]float64 { return q.ClustersEvicting }},
		{&clusterHardFamily, func(q *QuotaSnapshot) map[string]map[string]float64 { return q.ClustersHard }},
		{&clusterReservedFamily, func(q *QuotaSnapshot) map[string]map[string]float64 { return q.ClustersReserved }},
	} {
		each(f.family, func(q *QuotaSnapshot) {
			clusters := f.of(q)
			for _, cluster := range sortedOuter(s, clusters) {
				values := clusters[cluster]
				for _, resource := range s.sorted(values) {
					s.sample(values[resource], "cluster", cluster, "namespace", q.Namespace, "quota", q.Name, "resource", resource)
				}
			}
		})
	}
	each(&clusterEvictingUntilFamily, func(q *QuotaSnapshot) {
		for _, cluster := range sortedOuter(s, q.ClustersEvictingUntil) {
			s.sample(float64(q.ClustersEvictingUntil[cluster].Unix()), "cluster", cluster, "namespace", q.Namespace, "quota", q.Name)
		}
	})
	for _, f := range []struct {
		family *quotaFamily
		of     func(g GroupSnapshot) map[string]float64
	}{
		{&groupHardFamily, func(g GroupSnapshot) map[string]float64 { return g.Hard }},
		{&groupUsedFamily, func(g GroupSnapshot) map[string]float64 { return g.Used }},
		{&groupReservedFamily, func(g GroupSnapshot) map[string]float64 { return g.Reserved }},
	} {
		each(f.family, func(q *QuotaSnapshot) {
			for _, group := range sortedOuter(s, q.Groups) {
				values := f.of(q.Groups[group])
				for _, resource := range s.sorted(values) {
					s.sample(values[resource], "group", group, "namespace", q.Namespace, "quota", q.Name, "resource", resource)
				}
			}
		})
	}
	each(&businessNamespaceUsedFamily, func(q *QuotaSnapshot) {
		for _, ns := range sortedOuter(s, q.Namespaces) {
			values := q.Namespaces[ns]
			for _, resource := range s.sorted(values) {
				s.sample(values[resource], "namespace", ns, "quota", q.Name, "resource", resource)
			}
		}
	})
	// Zero is exported too, so a quota nobody waits on shows as such rather than as no data.
	each(&waitingFamily, func(q *QuotaSnapshot) { s.sample(float64(q.Waiting), "namespace", q.Namespace, "quota", q.Name) })
	each(&unclassifiedFamily, func(q *QuotaSnapshot) { s.sample(float64(q.Unclassified), "namespace", q.Namespace, "quota", q.Name) })
	each(&membersRunningMoreFamily, func(q *QuotaSnapshot) {
		if q.MembersRunningMore != nil {
			s.sample(*q.MembersRunningMore, "namespace", q.Namespace, "quota", q.Name)
		}
	})
	each(&oldestWaitingFamily, func(q *QuotaSnapshot) {
		if q.Waiting > 0 && !q.OldestWaiting.IsZero() {
			s.sample(float64(q.OldestWaiting.Unix()), "namespace", q.Namespace, "quota", q.Name)
		}
	})

	slices.SortFunc(stored, func(a, b StoredQuota) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for _, f := range []struct {
		family *quotaFamily
		of     func(q StoredQuota) float64
	}{
		{&generationFamily, func(q StoredQuota) float64 { return float64(q.Generation) }},
		{&observedGenerationFamily, func(q StoredQuota) float64 { return float64(q.ObservedGeneration) }},
		{&readyFamily, func(q StoredQuota) float64 {
			if q.Ready {
				return 1
			}
			return 0
		}},
	} {
		s.begin(f.family)
		for _, q := range stored {
			s.sample(f.of(q), "namespace", q.Namespace, "quota", q.Name)
		}
	}
}

// seriesWriter writes series of one family at a time in the text format, reusing its buffers.
type seriesWriter struct {
	w io.Writer
	// family is the family being written; its HELP and TYPE lines go out before its first series.
	family  *quotaFamily
	started bool
	line    []byte
	// inner and outer hold the sorted keys of the map being written and of the map of maps around it.
	inner, outer []string
}

func (s *seriesWriter) begin(f *quotaFamily) {
	s.family, s.started = f, false
}

// sample writes one series of the family: labels are name and value pairs, in order of their names.
func (s *seriesWriter) sample(value float64, labels ...string) {
	b := s.line[:0]
	if !s.started {
		s.started = true
		b = append(b, "# HELP "...)
		b = append(b, s.family.name...)
		b = append(b, ' ')
		b = appendEscaped(b, s.family.help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, s.family.name...)
		b = append(b, " gauge\n"...)
	}
	b = append(b, s.family.name...)
	b = append(b, '{')
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, labels[i]...)
		b = append(b, '=', '"')
		b = appendEscaped(b, labels[i+1], true)
		b = append(b, '"')
	}
	b = append(b, '}', ' ')
	b = strconv.AppendFloat(b, value, 'g', -1, 64)
	b = append(b, '\n')
	_, _ = s.w.Write(b)
	s.line = b
}

// sorted returns the keys of values in order, in the writer's inner buffer.
func (s *seriesWriter) sorted(values map[string]float64) []string {
	s.inner = slices.AppendSeq(s.inner[:0], maps.Keys(values))
	slices.Sort(s.inner)
	return s.inner
}

// sortedOuter returns the keys of m in order, in the writer's outer buffer, which sorted does not touch.
func sortedOuter[V any](s *seriesWriter, m map[string]V) []string {
	s.outer = slices.AppendSeq(s.outer[:0], maps.Keys(m))
	slices.Sort(s.outer)
	return s.outer
}

// appendEscaped appends text escaped for the text format: a backslash and a line feed always, a double quote in a
// label value.
func appendEscaped(b []byte, text string, labelValue bool) []byte {
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && labelValue:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}
