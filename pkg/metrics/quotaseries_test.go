package metrics

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// written is what a scrape writes of the per-quota series of snapshots and stored, as Prometheus parses it.
func written(t *testing.T, snapshots []QuotaSnapshot, stored []StoredQuota) prometheus.Gatherer {
	t.Helper()
	var b bytes.Buffer
	writeQuotaSeries(&b, snapshots, stored)
	return parsed(t, &b)
}

// served is what handler answers a scrape that takes no gzip, as Prometheus parses it.
func served(t testing.TB, handler http.Handler) prometheus.Gatherer {
	t.Helper()
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape answered %d: %s", rec.Code, rec.Body.String())
	}
	return parsed(t, rec.Body)
}

// parsed is the text exposition in r as Prometheus's parser reads it; the parser refuses what a scrape would (a
// family written twice, a malformed line).
func parsed(t testing.TB, r io.Reader) prometheus.Gatherer {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := parser.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	families := slices.SortedFunc(func(yield func(*dto.MetricFamily) bool) {
		for _, f := range byName {
			if !yield(f) {
				return
			}
		}
	}, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	// In the order a registry gathers them, which testutil compares against: by their label values.
	for _, f := range families {
		slices.SortFunc(f.Metric, func(a, b *dto.Metric) int {
			return slices.CompareFunc(a.GetLabel(), b.GetLabel(), func(x, y *dto.LabelPair) int {
				return cmp.Or(strings.Compare(x.GetName(), y.GetName()), strings.Compare(x.GetValue(), y.GetValue()))
			})
		})
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return families, nil })
}

// Handler serves the registry's families and the per-quota series in one text exposition, each family once, and
// a standby's (no snapshots) without the leader's families.
func TestHandlerServesTheRegistryAndTheQuotas(t *testing.T) {
	registry := prometheus.NewRegistry()
	requeued := prometheus.NewCounter(prometheus.CounterOpts{Name: "karmada_quota_test_requeued_total", Help: "A registry counter."})
	registry.MustRegister(requeued)
	requeued.Add(3)
	SetQuotaSource(fakeQuotas{teamQuota})
	SetStoredQuotaSource(fakeStoredQuotas{{Namespace: "team-a", Name: "team", Generation: 2, ObservedGeneration: 2, Ready: true}})
	t.Cleanup(func() {
		SetQuotaSource(nil)
		SetStoredQuotaSource(nil)
	})
	want := `
# HELP karmada_quota_test_requeued_total A registry counter.
# TYPE karmada_quota_test_requeued_total counter
karmada_quota_test_requeued_total 3
# HELP karmada_quota_hard Hard limit of a quota, in base units.
# TYPE karmada_quota_hard gauge
karmada_quota_hard{namespace="team-a",quota="team",resource="cpu"} 10
karmada_quota_hard{namespace="team-a",quota="team",resource="pods"} 20
# HELP karmada_quota_status_ready 1 when a quota's Ready condition is True, else 0, as this controller replica's cache holds it.
# TYPE karmada_quota_status_ready gauge
karmada_quota_status_ready{namespace="team-a",quota="team"} 1
`
	if err := testutil.GatherAndCompare(served(t, Handler(registry)), strings.NewReader(want),
		"karmada_quota_test_requeued_total", "karmada_quota_hard", "karmada_quota_status_ready"); err != nil {
		t.Error(err)
	}

	SetQuotaSource(nil)
	families, _ := served(t, Handler(registry)).Gather()
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	if want := []string{"karmada_quota_status_ready", "karmada_quota_metadata_generation", "karmada_quota_status_observed_generation", "karmada_quota_test_requeued_total"}; !sameSet(names, want) {
		t.Errorf("a standby serves %v, want %v", names, want)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// Prometheus asks for gzip: the answer is the same exposition, compressed and said so.
func TestHandlerGzips(t *testing.T) {
	SetQuotaSource(fakeQuotas{teamQuota})
	t.Cleanup(func() { SetQuotaSource(nil) })
	handler := Handler(prometheus.NewRegistry())
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	handler.ServeHTTP(rec, req)
	if got := rec.Header().Get("Content-Encoding"); got != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", got)
	}
	if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want the text format", got)
	}
	gz, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	plain := served(t, handler)
	if err := testutil.GatherAndCompare(parsed(t, gz), exposition(t, plain)); err != nil {
		t.Errorf("gzipped and plain scrapes differ: %v", err)
	}
}

// exposition is g's families in the text format.
func exposition(t *testing.T, g prometheus.Gatherer) io.Reader {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return &b
}

func TestHandlerAnswers500WhenTheRegistryFails(t *testing.T) {
	failing := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return nil, errors.New("collector broke") })
	rec := httptest.NewRecorder()
	Handler(failing).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "collector broke") {
		t.Errorf("answered %d %q, want 500 naming the error", rec.Code, rec.Body.String())
	}
}

// Names come from the apiserver (a resource may be any qualified name): what the text format escapes in a label
// value reaches Prometheus as it was.
func TestQuotaSeriesEscapeLabelValues(t *testing.T) {
	odd := `example.com/a"b\c` + "\nd"
	q := QuotaSnapshot{Namespace: "team-a", Name: "team", Hard: map[string]float64{odd: 1}}
	families, err := written(t, []QuotaSnapshot{q}, nil).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "karmada_quota_hard" {
			continue
		}
		for _, l := range f.GetMetric()[0].GetLabel() {
			if l.GetName() == "resource" && l.GetValue() == odd {
				return
			}
		}
	}
	t.Errorf("no karmada_quota_hard series with resource %q in %v", odd, families)
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                      false,
		"gzip":                  true,
		"identity":              false,
		"br, gzip;q=0.5":        true,
		"gzip;q=0":              false,
		"gzip; q=0.0, identity": false,
		"deflate, gzip ":        true,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}
