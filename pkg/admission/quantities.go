package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// maxQuantityExponent bounds the decimal exponent of a quantity ("1e6", "5E-3") the webhooks accept. Decoding
// "1e-2147483647" makes apimachinery's resource.ParseQuantity (v0.35) build a number of billions of digits: a
// request would spin a CPU for hours, and each retry another, until every binding write in the federation timed
// out on the webhook (fixed upstream in kubernetes/kubernetes#141203 and #141306, not in the pinned release). The
// pattern the CRDs check lets such a string through, so the webhooks refuse it before decoding. No real quantity
// comes near: the largest int64 is 9.2e18.
const maxQuantityExponent = 1000

// quantityFields are the paths of the objects' quantity maps: where ParseQuantity runs when the object is decoded.
// "*" stands for every element of a list.
var (
	bindingQuantityFields = [][]string{
		{"spec", "replicaRequirements", "resourceRequest"},
		{"spec", "components", "*", "replicaRequirements", "resourceRequest"},
	}
	quotaQuantityFields = [][]string{
		{"spec", "hard"},
		{"status", "hard"}, {"status", "used"}, {"status", "reserved"},
		{"status", "reservations", "*", "reserved"},
		{"status", "clusters", "*", "used"},
		{"status", "foldedReservations", "reserved"},
	}
)

// quantityGuard refuses, before the handler decodes it, a request whose object carries a quantity with an
// exponent beyond maxQuantityExponent. It costs a byte scan of the object; only an object with a long exponent
// somewhere is parsed generically to find out whether it is a quantity's.
type quantityGuard struct {
	admission.Handler
	fields [][]string
}

// Handle implements admission.Handler.
func (g quantityGuard) Handle(ctx context.Context, req admission.Request) admission.Response {
	if path, value := extremeQuantity(req.Object.Raw, g.fields); path != "" {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s: quantity %q has a decimal exponent beyond ±%d, which is "+
			"refused: decoding it would not end", path, value, maxQuantityExponent))
	}
	return g.Handler.Handle(ctx, req)
}

// extremeQuantity returns the path and value of the first quantity in raw whose exponent is beyond the bound, or
// "" when there is none.
func extremeQuantity(raw []byte, fields [][]string) (string, string) {
	if !mayHoldLongExponent(raw) {
		return "", ""
	}
	var obj any
	if err := json.Unmarshal(raw, &obj); err != nil {
		// Not JSON: the handler's decoder says so.
		return "", ""
	}
	for _, f := range fields {
		if path, value := walkQuantities(obj, f, nil); path != nil {
			return path.String(), value
		}
	}
	return "", ""
}

// mayHoldLongExponent reports whether raw holds a digit, an "e" or "E", maybe a sign, then more digits than the
// bound has, and a closing quote: the end of a JSON string that could be such a quantity.
func mayHoldLongExponent(raw []byte) bool {
	digits := len(strconv.Itoa(maxQuantityExponent))
	for i := 1; i < len(raw); i++ {
		if (raw[i] != 'e' && raw[i] != 'E') || raw[i-1] < '0' || raw[i-1] > '9' {
			continue
		}
		j := i + 1
		if j < len(raw) && (raw[j] == '+' || raw[j] == '-') {
			j++
		}
		n := 0
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
			n++
		}
		if n >= digits && j < len(raw) && raw[j] == '"' {
			return true
		}
	}
	return false
}

// walkQuantities follows rest from obj and checks the values of the maps it ends at.
func walkQuantities(obj any, rest []string, path *field.Path) (*field.Path, string) {
	if len(rest) == 0 {
		m, ok := obj.(map[string]any)
		if !ok {
			return nil, ""
		}
		for name, v := range m {
			if s, ok := v.(string); ok && exponentBeyondBound(s) {
				return path.Key(name), s
			}
		}
		return nil, ""
	}
	if rest[0] == "*" {
		items, ok := obj.([]any)
		if !ok {
			return nil, ""
		}
		for i, item := range items {
			if p, v := walkQuantities(item, rest[1:], path.Index(i)); p != nil {
				return p, v
			}
		}
		return nil, ""
	}
	m, ok := obj.(map[string]any)
	if !ok {
		return nil, ""
	}
	next := field.NewPath(rest[0])
	if path != nil {
		next = path.Child(rest[0])
	}
	return walkQuantities(m[rest[0]], rest[1:], next)
}

// exponentBeyondBound reports whether s ends in a decimal exponent whose magnitude exceeds the bound.
func exponentBeyondBound(s string) bool {
	i := strings.LastIndexAny(s, "eE")
	if i < 1 {
		return false
	}
	exp := strings.TrimLeft(s[i+1:], "+-")
	if exp == "" || strings.Trim(exp, "0123456789") != "" {
		return false
	}
	exp = strings.TrimLeft(exp, "0")
	return len(exp) > len(strconv.Itoa(maxQuantityExponent)) ||
		(len(exp) == len(strconv.Itoa(maxQuantityExponent)) && exp > strconv.Itoa(maxQuantityExponent))
}
