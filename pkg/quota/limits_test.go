package quota

import (
	"testing"
	"time"
)

func TestValidateReservationTTL(t *testing.T) {
	cases := map[string]struct {
		ttl     time.Duration
		wantErr string
	}{
		"the default":                          {ttl: 2 * time.Minute},
		"just above the apiserver's timeout":   {ttl: APIServerRequestTimeout + time.Second},
		"the longest":                          {ttl: MaxReservationTTL},
		"equal to the apiserver's timeout":     {ttl: APIServerRequestTimeout, wantErr: "must exceed the apiserver's request timeout (1m0s), got 1m0s"},
		"longer than the controller remembers": {ttl: MaxReservationTTL + time.Second, wantErr: "must be at most 10m0s, how long the controller remembers a deleted binding to settle its reservations, got 10m1s"},
		"an hour":                              {ttl: time.Hour, wantErr: "must be at most 10m0s, how long the controller remembers a deleted binding to settle its reservations, got 1h0m0s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := ValidateReservationTTL(tc.ttl)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("ValidateReservationTTL(%s) = %q, want %q", tc.ttl, got, tc.wantErr)
			}
		})
	}
}
