package controller

import (
	"time"

	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

// deletedBindings remembers deleted bindings as long as a reservation can live (quota.MaxReservationTTL, the
// bound quota-webhook enforces on --reservation-ttl), so that a reservation of a binding deleted before its write
// was observed is recognised, and settled, until it would have expired anyway.
func deletedBindings(now func() time.Time) *tombstones {
	return newTombstones(quota.MaxReservationTTL, now)
}
