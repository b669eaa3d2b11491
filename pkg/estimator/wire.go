package estimator

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The messages of karmada-scheduler-estimator's protocol (github.com/karmada-io/karmada/pkg/estimator/pb and
// .../service, Karmada v1.18.2), read and written field by field with protowire. Karmada's generated types embed
// Kubernetes' (NodeSelector, Toleration, Quantity) as protobuf messages, which k8s.io/api v0.35 is only with the
// build tag kubernetes_protomessage_one_more_release (without it, marshalling one panics); the estimator reads
// just the fields it needs, so our binaries need no such tag and outlive its removal. karmada_pb_test.go checks
// these readers against Karmada's own client.

// serviceName is the gRPC service karmada-scheduler calls.
const serviceName = "github.com.karmada_io.karmada.pkg.estimator.service.Estimator"

// replicasRequest is pb.MaxAvailableReplicasRequest: how many replicas of one kind fit on a cluster.
type replicasRequest struct {
	cluster       string
	namespace     string
	priorityClass string
	// requests are one replica's resource requests.
	requests corev1.ResourceList
}

// componentSetsRequest is pb.MaxAvailableComponentSetsRequest: how many sets of a multi-component workload fit.
type componentSetsRequest struct {
	cluster    string
	namespace  string
	components []Component
}

// Field numbers, from estimator.proto.
const (
	// MaxAvailableReplicasRequest
	replicasCluster      = 1
	replicasRequirements = 2
	// ReplicaRequirements
	requirementsResourceRequest      = 2
	requirementsNamespace            = 3
	requirementsPriorityClass        = 4
	requirementsResourceRequestBytes = 5
	// MaxAvailableComponentSetsRequest
	setsCluster    = 1
	setsComponents = 2
	setsNamespace  = 3
	// Component (its name, field 1, is not needed)
	componentRequirements = 2
	componentReplicas     = 3
	// ComponentReplicaRequirements
	componentResourceRequest      = 2
	componentPriorityClass        = 3
	componentResourceRequestBytes = 4
	// map entries, and resource.Quantity's one field
	entryKey       = 1
	entryValue     = 2
	quantityString = 1
	// every response has one int32 field
	responseValue = 1
)

var errTruncated = errors.New("truncated message")

// eachField calls f with every field of a message; f reads bytes-typed fields (strings, messages) from value and
// varints from number. Unknown fields and wire types are skipped, as proto3 readers do.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, value []byte, number uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("reading a field tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var value []byte
		var number uint64
		switch typ {
		case protowire.BytesType:
			value, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			number, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("reading field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, typ, value, number); err != nil {
			return fmt.Errorf("field %d: %w", num, err)
		}
	}
	return nil
}

func parseReplicasRequest(b []byte) (replicasRequest, error) {
	var r replicasRequest
	err := eachField(b, func(num protowire.Number, typ protowire.Type, value []byte, _ uint64) error {
		switch {
		case num == replicasCluster && typ == protowire.BytesType:
			r.cluster = string(value)
		case num == replicasRequirements && typ == protowire.BytesType:
			var err error
			if r.requests, err = parseRequirements(value, requirementsResourceRequest, requirementsResourceRequestBytes); err != nil {
				return err
			}
			return eachField(value, func(num protowire.Number, typ protowire.Type, value []byte, _ uint64) error {
				switch {
				case num == requirementsNamespace && typ == protowire.BytesType:
					r.namespace = string(value)
				case num == requirementsPriorityClass && typ == protowire.BytesType:
					r.priorityClass = string(value)
				}
				return nil
			})
		}
		return nil
	})
	return r, err
}

func parseComponentSetsRequest(b []byte) (componentSetsRequest, error) {
	var r componentSetsRequest
	err := eachField(b, func(num protowire.Number, typ protowire.Type, value []byte, _ uint64) error {
		switch {
		case num == setsCluster && typ == protowire.BytesType:
			r.cluster = string(value)
		case num == setsNamespace && typ == protowire.BytesType:
			r.namespace = string(value)
		case num == setsComponents && typ == protowire.BytesType:
			c, err := parseComponent(value)
			if err != nil {
				return err
			}
			r.components = append(r.components, c)
		}
		return nil
	})
	return r, err
}

func parseComponent(b []byte) (Component, error) {
	var c Component
	err := eachField(b, func(num protowire.Number, typ protowire.Type, value []byte, number uint64) error {
		switch {
		case num == componentReplicas && typ == protowire.VarintType:
			c.Replicas = int64(int32(number))
		case num == componentRequirements && typ == protowire.BytesType:
			var err error
			if c.Requests, err = parseRequirements(value, componentResourceRequest, componentResourceRequestBytes); err != nil {
				return err
			}
			return eachField(value, func(num protowire.Number, typ protowire.Type, value []byte, _ uint64) error {
				if num == componentPriorityClass && typ == protowire.BytesType {
					c.PriorityClass = string(value)
				}
				return nil
			})
		}
		return nil
	})
	return c, err
}

// parseRequirements reads the requests of (Component)ReplicaRequirements: the map of serialized quantities when the
// writer set it, as Karmada's readers prefer, otherwise the deprecated map of Quantity messages. Both carry a
// quantity as resource.Quantity's protobuf form, a message of one string.
func parseRequirements(b []byte, deprecatedField, bytesField protowire.Number) (corev1.ResourceList, error) {
	var fromBytes, fromMessages corev1.ResourceList
	err := eachField(b, func(num protowire.Number, typ protowire.Type, value []byte, _ uint64) error {
		if typ != protowire.BytesType || (num != deprecatedField && num != bytesField) {
			return nil
		}
		name, qty, err := parseQuantityEntry(value)
		if err != nil {
			return err
		}
		target := &fromMessages
		if num == bytesField {
			target = &fromBytes
		}
		if *target == nil {
			*target = corev1.ResourceList{}
		}
		(*target)[corev1.ResourceName(name)] = qty
		return nil
	})
	if fromBytes != nil {
		return fromBytes, err
	}
	return fromMessages, err
}

// parseQuantityEntry reads a map<string, Quantity> or map<string, bytes> entry: both hold the quantity's protobuf
// form.
func parseQuantityEntry(b []byte) (string, resource.Quantity, error) {
	var name, text string
	err := eachField(b, func(num protowire.Number, typ protowire.Type, value []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case entryKey:
			name = string(value)
		case entryValue:
			return eachField(value, func(num protowire.Number, typ protowire.Type, value []byte, _ uint64) error {
				if num == quantityString && typ == protowire.BytesType {
					text = string(value)
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return "", resource.Quantity{}, err
	}
	qty, err := resource.ParseQuantity(text)
	if err != nil {
		return "", resource.Quantity{}, fmt.Errorf("request %q: %w", name, err)
	}
	return name, qty, nil
}

// parseCluster reads the cluster of any request: field 1 of each.
func parseCluster(b []byte) (string, error) {
	var cluster string
	err := eachField(b, func(num protowire.Number, typ protowire.Type, value []byte, _ uint64) error {
		if num == 1 && typ == protowire.BytesType {
			cluster = string(value)
		}
		return nil
	})
	return cluster, err
}

// int32Response is any of the protocol's responses: one int32 field.
func int32Response(v int32) []byte {
	if v == 0 {
		return nil
	}
	b := protowire.AppendTag(nil, responseValue, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(int64(v)))
}

// frame is a message as bytes: the estimator's gRPC codec passes messages through unread, and the handlers parse
// them with the readers above.
type frame struct{ b []byte }

// codec is the gRPC codec of frames. Named "proto" so that it serves the content-subtype Karmada's client sends.
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("estimator codec: cannot marshal %T", v)
	}
	return f.b, nil
}

func (codec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("estimator codec: cannot unmarshal into %T", v)
	}
	// gRPC may reuse data once Unmarshal returns.
	f.b = append([]byte(nil), data...)
	return nil
}

func (codec) Name() string { return "proto" }
