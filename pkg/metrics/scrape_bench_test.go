package metrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// BenchmarkScrape reports what one scrape of the controller's per-quota series costs (Handler), at 10,000 quotas
// shaped as the scale benchmark's (go run ./test/bench --scale): cpu and memory limited, used on two member
// clusters. The heap a scrape allocates (B/op) is garbage the Go collector must make room for, every scrape
// interval; collected through a prometheus.Registry, these series cost 165 MB and 2.5 million allocations a scrape.
func BenchmarkScrape(b *testing.B) {
	const n = 10000
	snapshots := make(fakeQuotas, n)
	stored := make(fakeStoredQuotas, n)
	for i := range snapshots {
		values := func(cpu float64) map[string]float64 { return map[string]float64{"cpu": cpu, "memory": cpu * (1 << 30)} }
		snapshots[i] = QuotaSnapshot{
			Namespace: fmt.Sprintf("scale-%05d", i), Name: "quota",
			Hard: values(20), Used: values(10), Reserved: values(0),
			Clusters: map[string]map[string]float64{"member1": values(5), "member2": values(5)},
		}
		stored[i] = StoredQuota{Namespace: snapshots[i].Namespace, Name: "quota", Generation: 1, ObservedGeneration: 1, Ready: true}
	}
	SetQuotaSource(snapshots)
	SetStoredQuotaSource(stored)
	b.Cleanup(func() {
		SetQuotaSource(nil)
		SetStoredQuotaSource(nil)
	})
	handler := Handler(prometheus.NewRegistry())
	series, err := testutil.GatherAndCount(served(b, handler))
	if err != nil {
		b.Fatal(err)
	}
	if series < 10*n {
		b.Fatalf("a scrape exports %d series of %d quotas; the snapshots are not all exported", series, n)
	}
	// Timed as Prometheus scrapes: gzip accepted, the answer streamed to the connection, not kept.
	request := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	request.Header.Set("Accept-Encoding", "gzip")
	connection := &discardingResponse{header: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		handler.ServeHTTP(connection, request)
	}
	b.ReportMetric(float64(series), "series")
	b.ReportMetric(float64(connection.written)/float64(b.N), "gzipped-bytes/op")
}

// discardingResponse is a connection that takes whatever is written and keeps nothing.
type discardingResponse struct {
	header  http.Header
	written int
}

func (d *discardingResponse) Header() http.Header { return d.header }
func (d *discardingResponse) Write(p []byte) (int, error) {
	d.written += len(p)
	return len(p), nil
}
func (d *discardingResponse) WriteHeader(int) {}
