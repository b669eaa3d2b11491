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
