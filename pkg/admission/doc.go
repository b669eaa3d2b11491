// Package admission serves karmada-quota's validating webhooks: ResourceBinding writes are admitted against every
// matching KarmadaQuota with reservations written by compare-and-swap (Admitter), and KarmadaQuota objects are
// validated before they are stored.
package admission
