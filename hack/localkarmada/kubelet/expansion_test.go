package kubelet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"VAR_A": "A", "VAR_B": "B", "VAR_EMPTY": "", "VAR_REF": "$(VAR_A)"}
	cases := []struct {
		name, in, want string
	}{
		{"whole", "$(VAR_A)", "A"},
		{"inside", "___$(VAR_B)___", "___B___"},
		{"two", "$(VAR_A)-$(VAR_B)", "A-B"},
		{"empty value", "x$(VAR_EMPTY)y", "xy"},
		{"undefined kept", "$(VAR_DOES_NOT_EXIST)", "$(VAR_DOES_NOT_EXIST)"},
		{"escaped", "$$(VAR_A)", "$(VAR_A)"},
		{"escaped dollar", "$$", "$"},
		{"double escape then ref", "$$$(VAR_A)", "$A"},
		{"value not expanded again", "$(VAR_REF)", "$(VAR_A)"},
		{"unterminated", "$(VAR_A", "$(VAR_A"},
		{"lone dollar at end", "abc$", "abc$"},
		{"dollar then other", "$VAR_A", "$VAR_A"},
		{"empty reference", "$()", "$()"},
		{"no references", "plain --flag=value", "plain --flag=value"},
		{"nested parens", "$(VAR_A)(x)", "A(x)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Expand(tc.in, mappingOf(vars))); diff != "" {
				t.Errorf("Expand(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestMappingOfFirstMatchWins(t *testing.T) {
	lookup := mappingOf(map[string]string{"A": "first"}, map[string]string{"A": "second", "B": "b"})
	got := Expand("$(A) $(B) $(C)", lookup)
	if diff := cmp.Diff("first b $(C)", got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
