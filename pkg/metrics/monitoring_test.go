package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/yaml"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
)

// The chart's alerts and dashboard, and the README section that documents them, from this package's folder (go test
// runs a package's tests in its folder).
var (
	repoRoot      = filepath.Join("..", "..")
	monitoringDir = filepath.Join(repoRoot, "deploy", "charts", "karmada-quota", "files", "monitoring")
	alertsFile    = filepath.Join(monitoringDir, "alerts.yaml")
	dashboardFile = filepath.Join(monitoringDir, "dashboard.json")
	alertTests    = filepath.Join(repoRoot, "test", "monitoring", "alerts_test.yaml")
	readme        = filepath.Join(repoRoot, "README.md")
)

// exportedNames is every series name the two binaries export: the gathered families, a histogram as its _bucket,
// _sum and _count series (a query of the bare name matches nothing).
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, g := range []interface {
		Gather() ([]*dto.MetricFamily, error)
	}{webhookRegistry(t), controllerRegistry(t)} {
		families, err := g.Gather()
		if err != nil {
			t.Fatalf("Gather: %v", err)
		}
		for _, f := range families {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					names[f.GetName()+suffix] = true
				}
			case dto.MetricType_SUMMARY:
				names[f.GetName()] = true
				names[f.GetName()+"_sum"] = true
				names[f.GetName()+"_count"] = true
			default:
				names[f.GetName()] = true
			}
		}
	}
	return names
}

// checkNames fails for every metric name expr selects that the binaries do not export, and for an expression that
// selects none (the extraction missed something).
func checkNames(t *testing.T, where, expr string, exported map[string]bool) {
	t.Helper()
	names, err := metricNames(expr)
	if err != nil {
		t.Errorf("%s: %v in %q", where, err, expr)
		return
	}
	if len(names) == 0 {
		t.Errorf("%s: no metric name found in %q", where, expr)
	}
	for _, name := range names {
		if !exported[name] {
			t.Errorf("%s: metric %q is not exported by quota-webhook or quota-controller (expression %q)", where, name, expr)
		}
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func readAlerts(t *testing.T) ruleFile {
	t.Helper()
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules ruleFile
	if err := yaml.UnmarshalStrict(raw, &rules); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	if len(rules.Groups) == 0 {
		t.Fatalf("%s has no rule groups", alertsFile)
	}
	return rules
}

// TestAlerts checks what promtool cannot: every alert names only metrics the binaries export, carries a severity,
// a summary, a description and a runbook anchor the README has, and has unit tests that see it fire and stay
// quiet.
func TestAlerts(t *testing.T) {
	exported := exportedNames(t)
	rules := readAlerts(t)
	readmeText, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	firing, quiet := alertTestCoverage(t)

	const runbooks = "https://github.com/karmada-quota/karmada-quota/blob/main/README.md#"
	seen := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			where := g.Name + "/" + r.Alert
			if r.Alert == "" {
				t.Errorf("%s: a rule without an alert name (recording rules belong elsewhere)", g.Name)
				continue
			}
			if seen[r.Alert] {
				t.Errorf("%s: alert defined twice", where)
			}
			seen[r.Alert] = true
			checkNames(t, where, r.Expr, exported)
			switch r.Labels["severity"] {
			case "info", "warning", "critical":
			default:
				t.Errorf("%s: severity %q, want info, warning or critical", where, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s annotation", where, a)
				}
			}
			anchor := strings.ToLower(r.Alert)
			if want := runbooks + anchor; r.Annotations["runbook_url"] != want {
				t.Errorf("%s: runbook_url %q, want %q", where, r.Annotations["runbook_url"], want)
			}
			if !strings.Contains(string(readmeText), `<a id="`+anchor+`"></a>`) {
				t.Errorf("%s: README.md has no anchor %q for the runbook", where, anchor)
			}
			if !firing[r.Alert] || !quiet[r.Alert] {
				t.Errorf("%s: %s needs unit tests where it fires and where it does not (fires: %v, quiet: %v)", where, alertTests, firing[r.Alert], quiet[r.Alert])
			}
		}
	}
}

// quotaSelector is a selector of one of the series exported per quota, whose namespace label tells a KarmadaQuota
// (its namespace) from a KarmadaBusinessQuota (empty, stored as none): the name, and its matchers if any.
var quotaSelector = regexp.MustCompile(`\b(karmada_quota_(?:hard|used|reserved|cluster_[a-z_]+|group_[a-z_]+|bindings_[a-z_]+|members_running_more))\b(\{[^}]*\})?`)

// TestAlertsTellQuotaKinds: an alert on what a quota uses and limits names one kind of quota, so that its
// description names the quota as it is: a KarmadaBusinessQuota* alert selects every quota series with namespace="",
// and a KarmadaQuota* alert on the usage and limit series (hard, used, reserved, cluster_*, group_*) with
// namespace!="" (no "KarmadaQuota /shop"). The binding alerts, which both kinds raise, say the kind in their
// description instead, and the business ones read no per-namespace family but business_namespace_used.
func TestAlertsTellQuotaKinds(t *testing.T) {
	business := 0
	for _, g := range readAlerts(t).Groups {
		for _, r := range g.Rules {
			where := g.Name + "/" + r.Alert
			isBusiness := strings.HasPrefix(r.Alert, "KarmadaBusinessQuota")
			if isBusiness {
				business++
			}
			for _, m := range quotaSelector.FindAllStringSubmatch(r.Expr, -1) {
				name, matchers := m[1], m[2]
				switch {
				case isBusiness && !strings.Contains(matchers, `namespace=""`):
					t.Errorf("%s: %s%s does not select business quotas only (namespace=\"\")", where, name, matchers)
				case !isBusiness && strings.HasPrefix(r.Alert, "KarmadaQuota") && !strings.HasPrefix(name, "karmada_quota_bindings_") &&
					name != "karmada_quota_members_running_more" && !strings.Contains(matchers, `namespace!=""`):
					t.Errorf("%s: %s%s does not select KarmadaQuotas only (namespace!=\"\"): it would fire for business quotas "+
						"with a description naming \"KarmadaQuota /<name>\"", where, name, matchers)
				}
			}
			if !isBusiness && strings.Contains(r.Expr, "karmada_quota_business_") {
				t.Errorf("%s: a KarmadaQuota alert reads a business quota family", where)
			}
		}
	}
	if business == 0 {
		t.Error("no KarmadaBusinessQuota alert: business quotas would raise none")
	}
}

// alertTestCoverage reads promtool's test file: which alerts some test expects to fire, and which some test
// expects quiet.
func alertTestCoverage(t *testing.T) (firing, quiet map[string]bool) {
	t.Helper()
	raw, err := os.ReadFile(alertTests)
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(raw, &tests); err != nil {
		t.Fatalf("%s: %v", alertTests, err)
	}
	if want := []string{"../../deploy/charts/karmada-quota/files/monitoring/alerts.yaml"}; !cmp.Equal(want, tests.RuleFiles) {
		t.Errorf("%s tests %v, want %v", alertTests, tests.RuleFiles, want)
	}
	firing, quiet = map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	return firing, quiet
}

type dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string      `json:"name"`
			Type       string      `json:"type"`
			Query      any         `json:"query"`
			Datasource *datasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID          int         `json:"id"`
	Type        string      `json:"type"`
	Title       string      `json:"title"`
	Description string      `json:"description"`
	Datasource  *datasource `json:"datasource"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr       string      `json:"expr"`
		RefID      string      `json:"refId"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// queryPanels are the dashboard's panels that query, rows unfolded.
func queryPanels(d dashboard) []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return out
}

// labelValuesQuery is Grafana's label_values(selector, label) variable query.
var labelValuesQuery = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// variableSelectors are the selectors of the dashboard's label_values variables.
func variableSelectors(t *testing.T, d dashboard) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		query := ""
		switch q := v.Query.(type) {
		case string:
			query = q
		case map[string]any:
			query, _ = q["query"].(string)
		}
		m := labelValuesQuery.FindStringSubmatch(query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, query)
			continue
		}
		out[v.Name] = m[1]
	}
	return out
}

// TestDashboard checks the dashboard imports anywhere (a datasource variable of type prometheus, used by every
// panel), offers the filters, gives every panel a unit, and queries only metrics the binaries export.
func TestDashboard(t *testing.T) {
	exported := exportedNames(t)
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both must be set, so an import replaces rather than duplicates", d.UID, d.Title)
	}
	// 36 is Grafana 9's; older models are migrated on load, newer ones may not load in older Grafanas.
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want a current Grafana's (36 or later)", d.SchemaVersion)
	}
	variables := map[string]string{}
	for _, v := range d.Templating.List {
		variables[v.Name] = v.Type
		if v.Type == "datasource" && v.Query != "prometheus" {
			t.Errorf("variable %s: a datasource variable of type %v, want prometheus", v.Name, v.Query)
		}
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("variable %s: datasource %+v, want uid ${datasource}", v.Name, v.Datasource)
		}
	}
	if diff := cmp.Diff(map[string]string{"datasource": "datasource", "namespace": "query", "quota": "query", "business": "query", "resource": "query", "cluster": "query"}, variables); diff != "" {
		t.Errorf("variables (-want +got):\n%s", diff)
	}
	for name, selector := range variableSelectors(t, d) {
		checkNames(t, "variable "+name, selector, exported)
	}

	panels := queryPanels(d)
	if len(panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	ids := map[int]bool{}
	for _, p := range panels {
		where := fmt.Sprintf("panel %q", p.Title)
		if ids[p.ID] {
			t.Errorf("%s: id %d used twice", where, p.ID)
		}
		ids[p.ID] = true
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("%s: datasource %+v, want uid ${datasource}", where, p.Datasource)
		}
		if p.Description == "" {
			t.Errorf("%s: no description", where)
		}
		if want := unitFor(p.Title); p.FieldConfig.Defaults.Unit != want {
			t.Errorf("%s: unit %q, want %q", where, p.FieldConfig.Defaults.Unit, want)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no queries", where)
		}
		for _, target := range p.Targets {
			if target.Datasource == nil || target.Datasource.UID != "${datasource}" {
				t.Errorf("%s, query %s: datasource %+v, want uid ${datasource}", where, target.RefID, target.Datasource)
			}
			checkNames(t, where+", query "+target.RefID, target.Expr, exported)
		}
	}
}

// unitFor is the unit a panel's title promises: rates in operations per second, CPU in cores, memory and storage
// in bytes, times (latencies, waits, time left) in seconds, shares of hard in percent, anything else a plain number.
func unitFor(title string) string {
	switch t := strings.ToLower(title); {
	case strings.Contains(t, "per second"):
		return "ops"
	case strings.HasPrefix(t, "cpu"):
		return "suffix: cores"
	case strings.HasPrefix(t, "memory"):
		return "bytes"
	case strings.Contains(t, "latency"), strings.Contains(t, "wait for"), strings.Contains(t, "time left"):
		return "s"
	case strings.Contains(t, "against hard"):
		return "percentunit"
	default:
		return "short"
	}
}

// grafanaIntervals stand in for Grafana's interval variables, so that a dashboard query is PromQL.
var grafanaIntervals = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// TestMonitoringQueriesParse parses every query of the dashboard with Prometheus's own parser, by handing them to
// promtool as recording rules (the alerts file is checked by promtool directly).
func TestMonitoringQueriesParse(t *testing.T) {
	promtool := pinnedPromtool(t)
	d := readDashboard(t)
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for _, p := range queryPanels(d) {
		for _, target := range p.Targets {
			rules = append(rules, rule{Record: fmt.Sprintf("dashboard:panel_%d:%s", p.ID, strings.ToLower(target.RefID)), Expr: grafanaIntervals.Replace(target.Expr)})
		}
	}
	names := make([]string, 0)
	selectors := variableSelectors(t, d)
	for name := range selectors {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rules = append(rules, rule{Record: "dashboard:variable:" + name, Expr: selectors[name]})
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	if output, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the dashboard's queries: %v\n%s", err, output)
	}
}

// pinnedPromtool is the promtool to parse with: PROMTOOL when set (`make test-unit` sets it), otherwise the one
// `make` builds into its cache, so that a plain `go test ./...` finds it. Missing, it fails rather than skips: a
// skipped test would let a broken dashboard query through CI unnoticed.
func pinnedPromtool(t *testing.T) string {
	t.Helper()
	if path := os.Getenv("PROMTOOL"); path != "" {
		return path
	}
	dir, err := testenv.ToolDir("prometheus", "github.com/prometheus/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "promtool")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("promtool is not built (%v) and PROMTOOL is not set: `make test-unit` builds it and runs this test "+
			"with it; `make promtool` only builds it", err)
	}
	return path
}

// metricNames returns the metric names a PromQL expression selects, sorted and once each. It is a small lexer, not
// a parser: the PromQL parser lives in the prometheus module, which go.mod does not carry, and promtool parses the
// same expressions in `make test-monitoring`. An identifier is a metric name unless it is a keyword, a function or
// an aggregation (followed by "(" or by by/without), a label name in a {...} matcher or a by/without/on/ignoring/
// group_left/group_right list, part of a number or duration, or inside a string.
func metricNames(expr string) ([]string, error) {
	keywords := map[string]bool{
		"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true, "ignoring": true,
		"group_left": true, "group_right": true, "offset": true, "bool": true, "atan2": true, "inf": true, "nan": true,
	}
	labelLists := map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(expr) && strings.ContainsRune(" \t\r\n", rune(expr[i])) {
			i++
		}
		return i
	}
	// skipString returns the index after the string starting at i.
	skipString := func(i int) (int, error) {
		quote := expr[i]
		for j := i + 1; j < len(expr); j++ {
			switch {
			case expr[j] == '\\' && quote != '`':
				j++
			case expr[j] == quote:
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string at %d", i)
	}
	// skipGroup returns the index after the group opened at i, strings inside included.
	skipGroup := func(i int, open, close byte) (int, error) {
		depth := 0
		for j := i; j < len(expr); {
			switch c := expr[j]; {
			case c == '"' || c == '\'' || c == '`':
				next, err := skipString(j)
				if err != nil {
					return 0, err
				}
				j = next
				continue
			case c == open:
				depth++
			case c == close:
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
			j++
		}
		return 0, fmt.Errorf("unclosed %q at %d", open, i)
	}

	seen := map[string]bool{}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			next, err := skipString(i)
			if err != nil {
				return nil, err
			}
			i = next
		case c == '{':
			group := expr[i:]
			next, err := skipGroup(i, '{', '}')
			if err != nil {
				return nil, err
			}
			if strings.Contains(group[:next-i], "__name__") {
				return nil, fmt.Errorf("a selector by __name__ at %d: name the metric instead", i)
			}
			i = next
		case c == '[':
			next, err := skipGroup(i, '[', ']')
			if err != nil {
				return nil, err
			}
			i = next
		case c >= '0' && c <= '9' || c == '.':
			// A number or a duration: 0.99, 1e3, 0x1f, 5m, 1h30m.
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case c == '$':
			return nil, fmt.Errorf("a Grafana variable outside a string or a range at %d", i)
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
			word := expr[start:i]
			lower := strings.ToLower(word)
			next := skipSpace(i)
			if labelLists[lower] {
				if next < len(expr) && expr[next] == '(' {
					end, err := skipGroup(next, '(', ')')
					if err != nil {
						return nil, err
					}
					i = end
				}
				continue
			}
			if keywords[lower] {
				continue
			}
			if next < len(expr) && expr[next] == '(' {
				continue // a function or an aggregation
			}
			if after := expr[next:]; startsWithWord(after, "by") || startsWithWord(after, "without") {
				continue // an aggregation with its grouping first: sum by (x) (...)
			}
			seen[word] = true
		default:
			i++
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

func startsWithWord(s, word string) bool {
	if !strings.HasPrefix(strings.ToLower(s), word) {
		return false
	}
	return len(s) == len(word) || !(s[len(word)] == '_' || s[len(word)] == ':' ||
		s[len(word)] >= 'a' && s[len(word)] <= 'z' || s[len(word)] >= 'A' && s[len(word)] <= 'Z' || s[len(word)] >= '0' && s[len(word)] <= '9')
}

func TestMetricNames(t *testing.T) {
	cases := map[string]struct {
		expr    string
		want    []string
		wantErr bool
	}{
		"a bare name":     {expr: "up", want: []string{"up"}},
		"label matchers":  {expr: `a_total{job="x", resource=~"(requests\\.)?cpu", q!="}"}`, want: []string{"a_total"}},
		"functions":       {expr: `histogram_quantile(0.99, sum by (le, kind) (rate(b_bucket{kind="RB"}[5m])))`, want: []string{"b_bucket"}},
		"grouping after":  {expr: `sum(rate(c_total[$__rate_interval])) by (writer)`, want: []string{"c_total"}},
		"grouping first":  {expr: `max without (instance, pod) (used) / max without (instance, pod) (hard > 0) > 0.9 < 1`, want: []string{"hard", "used"}},
		"vector matching": {expr: `a / ignoring (reason) group_left (x) b unless on (job) c and d or e`, want: []string{"a", "b", "c", "d", "e"}},
		"time and absent": {expr: `time() - min without (instance) (ts) > 1800 or absent(x_total)`, want: []string{"ts", "x_total"}},
		"offset and @":    {expr: `rate(a[5m] offset 1h) and b @ 1609746000 and c @ start()`, want: []string{"a", "b", "c"}},
		"strings ignored": {expr: `label_replace(a, "dst", "$1", "src", "(.*)")`, want: []string{"a"}},
		"numbers only":    {expr: `1 + 2e3 * 0x1f`, want: []string{}},
		"by __name__":     {expr: `{__name__="a"}`, wantErr: true},
		"a stray variable": {
			expr: `rate(a[5m]) > $threshold`, wantErr: true,
		},
		"an unterminated string": {expr: `a{job="x}`, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := metricNames(tc.expr)
			if (err != nil) != tc.wantErr {
				t.Fatalf("metricNames(%q) error = %v, want error %v", tc.expr, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("metricNames(%q) (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}
