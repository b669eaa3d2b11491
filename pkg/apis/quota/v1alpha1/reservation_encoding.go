package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A reservation is stored as one string, its fields separated by single spaces:
//
//	<apiVersion> <kind> [<namespace>/]<name> <uid> <generation> <expiry> <reserved> [<cluster>:<reserved>]...
//
// with the expiry in seconds since the epoch and each <reserved> its resources as name=quantity, sorted by name and
// joined by commas ("-" when empty), for example
//
//	work.karmada.io/v1alpha2 ResourceBinding web-deployment 6c1e… 2 1795766400 cpu=1,memory=128Mi member1:cpu=1
//
// Why a string: the apiserver's cost of a ledger write grows with the number of fields it decodes, validates and
// tracks, not with bytes, and a ledger is written once per admitted batch. A reservation of four resources on two
// clusters is some twenty fields as an object; as a string it costs the ledger write 0.6–0.7× (docs/performance.md,
// "A reservation is one string"). None of the separators can occur in a field: Kubernetes names, UIDs, resource
// names and quantities hold no space, '=' or ','; a cluster name (a DNS label) no ':'.
//
// Reading also takes the object form releases before this one wrote, and the schema takes both: a ledger they left
// is served and read as it is, and written as strings by its next write. During a rollout a replica of such a
// release may still append an object, which this one reads; once it reads a string it can no longer decode the
// ledger, and fails closed (it cannot write without a read that decoded).

// emptyList stands for a list of no resources.
const emptyList = "-"

// MarshalJSON writes the reservation as its string.
func (r Reservation) MarshalJSON() ([]byte, error) {
	return json.Marshal(r.String())
}

// String is the reservation as stored.
func (r Reservation) String() string {
	var b strings.Builder
	owner := r.ReservedBy.Name
	if r.ReservedBy.Namespace != "" {
		owner = r.ReservedBy.Namespace + "/" + owner
	}
	b.WriteString(r.ReservedBy.APIVersion)
	for _, field := range []string{
		r.ReservedBy.Kind, owner, string(r.ReservedBy.UID),
		strconv.FormatInt(r.Generation, 10), strconv.FormatInt(r.ExpirationTime.Unix(), 10),
	} {
		b.WriteByte(' ')
		b.WriteString(field)
	}
	b.WriteByte(' ')
	writeList(&b, r.Reserved)
	for _, c := range r.Clusters {
		b.WriteByte(' ')
		b.WriteString(c.Name)
		b.WriteByte(':')
		writeList(&b, c.Reserved)
	}
	return b.String()
}

// writeList writes name=quantity pairs sorted by name, so that a reservation has one string.
func writeList(b *strings.Builder, list corev1.ResourceList) {
	if len(list) == 0 {
		b.WriteString(emptyList)
		return
	}
	for i, name := range slices.Sorted(maps.Keys(list)) {
		if i > 0 {
			b.WriteByte(',')
		}
		q := list[name]
		b.WriteString(string(name))
		b.WriteByte('=')
		b.WriteString(q.String())
	}
}

// UnmarshalJSON reads the reservation's string, or the object a release before this one wrote. An entry that is
// neither is read as a reservation whose Malformed says why, not as an error: an error would fail the decoding of
// every ledger listed with it (an informer's list), where this fails only its own quota's admissions, closed, with
// the reason (the ledger's reader checks Malformed).
func (r *Reservation) UnmarshalJSON(data []byte) error {
	parsed, err := decodeReservation(data)
	if err != nil {
		parsed = Reservation{Malformed: err.Error()}
	}
	*r = parsed
	return nil
}

func decodeReservation(data []byte) (Reservation, error) {
	// The type without its methods, so that decoding it does not come back here.
	type object Reservation
	return decodeStringOrObject(data, "reservation", ParseReservation, func(o object) (Reservation, error) { return Reservation(o), nil })
}

// decodeStringOrObject reads a list entry written as a string (read by parse), or as the object releases before
// wrote (decoded into O, a method-less copy of the type, and checked by fromObject).
func decodeStringOrObject[T, O any](data []byte, what string, parse func(string) (T, error), fromObject func(O) (T, error)) (T, error) {
	var zero T
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		var o O
		if err := json.Unmarshal(data, &o); err != nil {
			return zero, fmt.Errorf("%s %s: %w", what, data, err)
		}
		return fromObject(o)
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return zero, fmt.Errorf("%s %s: neither a string nor an object", what, data)
	}
	return parse(s)
}

// ParseReservation reads a reservation's string.
func ParseReservation(s string) (Reservation, error) {
	fields := strings.Split(s, " ")
	if len(fields) < 7 {
		return Reservation{}, fmt.Errorf("reservation %q: want apiVersion, kind, owner, uid, generation, expiry and reserved, separated by spaces", s)
	}
	var r Reservation
	r.ReservedBy.APIVersion, r.ReservedBy.Kind = fields[0], fields[1]
	if ns, name, ok := strings.Cut(fields[2], "/"); ok {
		r.ReservedBy.Namespace, r.ReservedBy.Name = ns, name
	} else {
		r.ReservedBy.Name = fields[2]
	}
	r.ReservedBy.UID = types.UID(fields[3])
	var err error
	if r.Generation, err = strconv.ParseInt(fields[4], 10, 64); err != nil {
		return Reservation{}, fmt.Errorf("reservation %q: generation: %w", s, err)
	}
	expiry, err := strconv.ParseInt(fields[5], 10, 64)
	if err != nil {
		return Reservation{}, fmt.Errorf("reservation %q: expiry: %w", s, err)
	}
	r.ExpirationTime = metav1.Unix(expiry, 0)
	if r.Reserved, err = parseList(fields[6]); err != nil {
		return Reservation{}, fmt.Errorf("reservation %q: %w", s, err)
	}
	for _, field := range fields[7:] {
		name, list, ok := strings.Cut(field, ":")
		if !ok || name == "" {
			return Reservation{}, fmt.Errorf("reservation %q: %q is not <cluster>:<reserved>", s, field)
		}
		c := ClusterReservation{Name: name}
		if c.Reserved, err = parseList(list); err != nil {
			return Reservation{}, fmt.Errorf("reservation %q: cluster %s: %w", s, name, err)
		}
		r.Clusters = append(r.Clusters, c)
	}
	if r.ReservedBy.Name == "" || r.ReservedBy.UID == "" {
		return Reservation{}, fmt.Errorf("reservation %q: the owner needs a name and a uid", s)
	}
	return r, nil
}

// parseList reads name=quantity pairs joined by commas.
func parseList(s string) (corev1.ResourceList, error) {
	if s == emptyList {
		return corev1.ResourceList{}, nil
	}
	pairs := strings.Split(s, ",")
	list := make(corev1.ResourceList, len(pairs))
	for _, pair := range pairs {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not name=quantity", pair)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if _, dup := list[corev1.ResourceName(name)]; dup {
			return nil, fmt.Errorf("%s is listed twice", name)
		}
		list[corev1.ResourceName(name)] = q
	}
	return list, nil
}

// A cluster's observed usage (LedgerObserved.Clusters) is one string too, "<cluster>:<used>", <used> written as a
// reservation's <reserved>, for example "member1:cpu=15,memory=15Gi": the webhook rewrites the ledger whole with
// every admission it writes, and as objects, two clusters' usage cost a ledger write 0.4× more than the rest of it
// (docs/performance.md, "A cluster's usage is one string"). The object form releases before wrote is read too.

// MarshalJSON writes the cluster's usage as its string.
func (c ClusterUsed) MarshalJSON() ([]byte, error) {
	return json.Marshal(c.String())
}

// String is the cluster's usage as stored.
func (c ClusterUsed) String() string {
	var b strings.Builder
	b.WriteString(c.Name)
	b.WriteByte(':')
	writeList(&b, c.Used)
	return b.String()
}

// UnmarshalJSON reads the cluster's usage string, or the object a release before this one wrote. An entry that is
// neither is read with Malformed saying why, not as an error, for the reason Reservation.UnmarshalJSON gives.
func (c *ClusterUsed) UnmarshalJSON(data []byte) error {
	parsed, err := decodeClusterUsed(data)
	if err != nil {
		parsed = ClusterUsed{Malformed: err.Error()}
	}
	*c = parsed
	return nil
}

func decodeClusterUsed(data []byte) (ClusterUsed, error) {
	// The type without its methods, so that decoding it does not come back here.
	type object ClusterUsed
	return decodeStringOrObject(data, "cluster usage", ParseClusterUsed, func(o object) (ClusterUsed, error) {
		if o.Name == "" {
			return ClusterUsed{}, errors.New("cluster usage without a cluster name")
		}
		return ClusterUsed(o), nil
	})
}

// ParseClusterUsed reads a cluster's usage string.
func ParseClusterUsed(s string) (ClusterUsed, error) {
	name, list, ok := strings.Cut(s, ":")
	if !ok || name == "" || strings.Contains(list, " ") {
		return ClusterUsed{}, fmt.Errorf("cluster usage %q is not <cluster>:<used>", s)
	}
	used, err := parseList(list)
	if err != nil {
		return ClusterUsed{}, fmt.Errorf("cluster usage %q: %w", s, err)
	}
	return ClusterUsed{Name: name, Used: used}, nil
}

// Unreadable reports whether the ledger lists a reservation or an observed cluster usage that could not be read
// (Malformed): hand-edited, since the schema takes any entry there.
func (s *LedgerState) Unreadable() bool {
	for _, r := range s.Reservations {
		if r.Malformed != "" {
			return true
		}
	}
	if s.Observed != nil {
		for _, c := range s.Observed.Clusters {
			if c.Malformed != "" {
				return true
			}
		}
	}
	return false
}
