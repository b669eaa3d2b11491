package promtext

import "testing"

func TestParseAndSum(t *testing.T) {
	before := Parse(`# HELP x
apiserver_request_total{code="200",resource="resourcebindings",verb="PATCH"} 10
apiserver_request_total{code="409",resource="resourcebindings",verb="PATCH"} 2
h_sum{name="a \"quoted\", name"} 1.5
h_count{name="a \"quoted\", name"} 3
plain 7
`)
	after := Parse(`apiserver_request_total{code="200",resource="resourcebindings",verb="PATCH"} 30
apiserver_request_total{code="409",resource="resourcebindings",verb="PATCH"} 4
h_sum{name="a \"quoted\", name"} 4.5
h_count{name="a \"quoted\", name"} 6
plain 7
`)
	if got := before.Sum("apiserver_request_total", map[string]string{"verb": "PATCH"}); got != 12 {
		t.Errorf("Sum = %v, want 12", got)
	}
	if got := Delta(before, after, "apiserver_request_total", map[string]string{"code": "409"}); got != 2 {
		t.Errorf("Delta = %v, want 2", got)
	}
	mean, n := Mean(before, after, "h", map[string]string{"name": `a "quoted", name`})
	if mean != 1 || n != 3 {
		t.Errorf("Mean = %v over %v, want 1 over 3", mean, n)
	}
	if !after.Has("plain") || after.Has("missing") {
		t.Error("Has is wrong")
	}
}
