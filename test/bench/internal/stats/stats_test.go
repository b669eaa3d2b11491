package stats

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClassify(t *testing.T) {
	status := func(code int32, reason metav1.StatusReason, msg string) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Code: code, Reason: reason, Message: msg}}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{status(403, "QuotaExceeded", "quota bench exceeded"), QuotaExceeded},
		{status(403, "Forbidden", "denied"), "403 Forbidden (denied: not quota)"},
		{status(500, "InternalError", `failed calling webhook "x": context deadline exceeded`), "500 InternalError (webhook call timed out)"},
		{status(500, "", "failed to apply FederatedResourceQuota updates after multiple retries for RB a/b"), "500 (FRQ status write: conflict retries exhausted)"},
		{errors.New("connection refused"), "client: connection refused"},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestSummary(t *testing.T) {
	r := NewRecorder()
	for i := 1; i <= 100; i++ {
		r.Observe(time.Duration(i)*time.Millisecond, nil)
	}
	r.Observe(time.Second, &apierrors.StatusError{ErrStatus: metav1.Status{Code: 403, Reason: "QuotaExceeded"}})
	s := r.Summary()
	if s.Ops != 101 || s.Admitted != 100 || s.Denied != 1 || s.Failed() != 0 {
		t.Errorf("counts: %+v", s)
	}
	if s.P50 != 51*time.Millisecond || s.P99 != 100*time.Millisecond || s.Max != time.Second {
		t.Errorf("P50 %v, P99 %v, Max %v", s.P50, s.P99, s.Max)
	}
}

func TestMerge(t *testing.T) {
	first, second := NewRecorder(), NewRecorder()
	for i := 1; i <= 50; i++ {
		first.Observe(time.Duration(i)*time.Millisecond, nil)
		second.Observe(time.Duration(50+i)*time.Millisecond, nil)
	}
	timeout := &apierrors.StatusError{ErrStatus: metav1.Status{Code: 500, Reason: "InternalError", Message: `failed calling webhook "x": context deadline exceeded`}}
	second.Observe(2*time.Second, timeout)
	first.Observe(time.Millisecond, &apierrors.StatusError{ErrStatus: metav1.Status{Code: 403, Reason: "QuotaExceeded"}})
	first.Count("c")
	second.Count("c")

	s := Merge(first, second).Summary()
	if s.Ops != 102 || s.Admitted != 100 || s.Denied != 1 || s.Failed() != 1 || s.Counters["c"] != 2 {
		t.Errorf("counts: %+v", s)
	}
	if s.Examples["500 InternalError (webhook call timed out)"] == "" {
		t.Errorf("the failure's example is lost: %v", s.Examples)
	}
	// Percentiles over every sample of both: neither phase's own p99.
	if s.P50 != 50*time.Millisecond || s.P99 != 100*time.Millisecond || s.Max != 2*time.Second {
		t.Errorf("P50 %v, P99 %v, Max %v", s.P50, s.P99, s.Max)
	}
	// The recorders merged are left as they were.
	if f := first.Summary(); f.Ops != 51 || f.Counters["c"] != 1 {
		t.Errorf("the first recorder changed: %+v", f)
	}
}
