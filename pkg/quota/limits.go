package quota

import (
	"fmt"
	"time"
)

// A reservation's lifetime is the one limit quota-webhook and quota-controller must agree on: the webhook sets it
// (--reservation-ttl), and the controller relies on its bounds. It lives here, beside the reservations it bounds,
// and each binary reads it from here.

// APIServerRequestTimeout is the karmada-apiserver's default --request-timeout. A reservation must outlive it:
// otherwise a binding write admitted at the start of its request could commit after its reservation lapsed, and
// go uncounted until the controller observed it.
const APIServerRequestTimeout = 60 * time.Second

// MaxReservationTTL is the longest a reservation may live. The controller remembers a deleted binding this long,
// so that it settles the reservations of a binding deleted before its write was observed at once rather than at
// their expiry: a reservation admitted before the delete expires before the controller forgets it.
const MaxReservationTTL = 10 * time.Minute

// ValidateReservationTTL checks a reservation TTL against both bounds: above APIServerRequestTimeout, at most
// MaxReservationTTL.
func ValidateReservationTTL(ttl time.Duration) error {
	switch {
	case ttl <= APIServerRequestTimeout:
		return fmt.Errorf("must exceed the apiserver's request timeout (%s), got %s", APIServerRequestTimeout, ttl)
	case ttl > MaxReservationTTL:
		return fmt.Errorf("must be at most %s, how long the controller remembers a deleted binding to settle its reservations, got %s", MaxReservationTTL, ttl)
	}
	return nil
}
