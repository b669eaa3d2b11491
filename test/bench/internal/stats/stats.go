// Package stats records what one workload's writes saw: every latency (percentiles come from all samples, not a
// histogram) and every outcome, with errors classified by HTTP code and reason.
package stats

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// QuotaExceeded is the status reason both quota webhooks give a denial (karmada-quota's admission package and
// Karmada's util.QuotaExceededReason): 403, reason QuotaExceeded.
const QuotaExceeded = "QuotaExceeded"

// Recorder collects the outcomes of concurrent writes.
type Recorder struct {
	mu        sync.Mutex
	latencies []time.Duration
	admitted  int
	denied    int
	errors    map[string]int
	examples  map[string]string
	counters  map[string]int
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{errors: map[string]int{}, examples: map[string]string{}, counters: map[string]int{}}
}

// Observe records one write: its latency and its result.
func (r *Recorder) Observe(took time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latencies = append(r.latencies, took)
	switch class := Classify(err); class {
	case "":
		r.admitted++
	case QuotaExceeded:
		r.denied++
	default:
		r.errors[class]++
		if _, ok := r.examples[class]; !ok {
			r.examples[class] = err.Error()
		}
	}
}

// Merge is a recorder holding every observation and count of recs, so that writes timed in several phases add up
// to one summary whose percentiles come from all their samples, not from the phases' percentiles.
func Merge(recs ...*Recorder) *Recorder {
	out := NewRecorder()
	for _, r := range recs {
		r.mu.Lock()
		out.latencies = append(out.latencies, r.latencies...)
		out.admitted += r.admitted
		out.denied += r.denied
		for k, v := range r.errors {
			out.errors[k] += v
		}
		for k, v := range r.examples {
			if _, ok := out.examples[k]; !ok {
				out.examples[k] = v
			}
		}
		for k, v := range r.counters {
			out.counters[k] += v
		}
		r.mu.Unlock()
	}
	return out
}

// Count adds one to a named counter, for what a workload wants to say about particular writes.
func (r *Recorder) Count(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counters[name]++
}

// Classify names an error's class: "" for success, QuotaExceeded for a quota denial (403 with that reason), else
// "<code> <reason>" from the metav1.Status, with the cause spelled out where the message says which side failed:
// the apiserver's call to the webhook, or the webhook's own quota bookkeeping.
func Classify(err error) string {
	if err == nil {
		return ""
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return "client: " + shorten(err.Error())
	}
	s := status.Status()
	if s.Code == 403 && s.Reason == QuotaExceeded {
		return QuotaExceeded
	}
	class := fmt.Sprint(s.Code)
	if s.Reason != "" {
		class += " " + string(s.Reason)
	}
	msg := s.Message
	switch {
	case strings.Contains(msg, "failed calling webhook") && (strings.Contains(msg, "deadline exceeded") || strings.Contains(msg, "Timeout")):
		class += " (webhook call timed out)"
	case strings.Contains(msg, "failed calling webhook"):
		class += " (webhook call failed)"
	case strings.Contains(msg, "failed to apply FederatedResourceQuota updates after multiple retries"):
		class += " (FRQ status write: conflict retries exhausted)"
	case strings.Contains(msg, "permanent error updating FRQ statuses"):
		class += " (FRQ status write failed)"
	case strings.Contains(msg, "could not be listed") || strings.Contains(msg, "fail closed"):
		class += " (quota state unreadable)"
	case s.Code == 403:
		class += " (denied: not quota)"
	}
	return class
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Summary is what a workload's writes add up to.
type Summary struct {
	Ops      int
	Admitted int
	// Denied counts quota denials (403 QuotaExceeded), which are correct answers, not failures.
	Denied int
	// Errors counts every other failure by class; Examples holds one message per class.
	Errors   map[string]int
	Examples map[string]string
	// Counters are the workload's named counts (see Recorder.Count).
	Counters map[string]int
	P50, P99 time.Duration
	Max      time.Duration
	Mean     time.Duration
}

// Summary computes the percentiles from every sample.
func (r *Recorder) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	sorted := append([]time.Duration(nil), r.latencies...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	s := Summary{
		Ops: len(sorted), Admitted: r.admitted, Denied: r.denied,
		Errors: map[string]int{}, Examples: map[string]string{}, Counters: map[string]int{},
		P50: Percentile(sorted, 50), P99: Percentile(sorted, 99),
	}
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	if len(sorted) > 0 {
		s.Max = sorted[len(sorted)-1]
		s.Mean = sum / time.Duration(len(sorted))
	}
	for k, v := range r.errors {
		s.Errors[k] = v
	}
	for k, v := range r.examples {
		s.Examples[k] = v
	}
	for k, v := range r.counters {
		s.Counters[k] = v
	}
	return s
}

// Failed is the number of writes that ended in an error other than a quota denial.
func (s Summary) Failed() int {
	n := 0
	for _, v := range s.Errors {
		n += v
	}
	return n
}

// Percentile is the nearest-rank percentile p (0-100) of sorted samples.
func Percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[i]
}
