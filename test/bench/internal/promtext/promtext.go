// Package promtext reads the few numbers the report quotes from Prometheus text exposition: sums of the samples
// of one metric whose labels match. It is deliberately small; the harness only needs counters and histogram
// sums and counts, compared before and after a workload.
package promtext

import (
	"strconv"
	"strings"
)

// Metrics is one scrape.
type Metrics []sample

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// Parse reads the text format, skipping comments and anything it cannot read.
func Parse(text string) Metrics {
	var out Metrics
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			s.name = line[:i]
			parseLabels(line[i+1:j], s.labels)
			rest = strings.TrimSpace(line[j+1:])
		} else {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			s.name, rest = f[0], f[1]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out
}

func parseLabels(s string, into map[string]string) {
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return
		}
		key := strings.TrimSpace(strings.TrimPrefix(s[:eq], ","))
		var val strings.Builder
		i := eq + 2
		for ; i < len(s); i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				val.WriteByte(s[i])
				continue
			}
			if s[i] == '"' {
				break
			}
			val.WriteByte(s[i])
		}
		into[key] = val.String()
		s = strings.TrimPrefix(s[min(i+1, len(s)):], ",")
	}
}

// Sum adds the samples of name whose labels include every pair in match.
func (m Metrics) Sum(name string, match map[string]string) float64 {
	var total float64
	for _, s := range m {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// Has says whether any sample of name exists.
func (m Metrics) Has(name string) bool {
	for _, s := range m {
		if s.name == name {
			return true
		}
	}
	return false
}

// Mean is the mean observation of histogram name between two scrapes (0 when nothing was observed).
func Mean(before, after Metrics, name string, match map[string]string) (mean float64, count float64) {
	count = after.Sum(name+"_count", match) - before.Sum(name+"_count", match)
	if count <= 0 {
		return 0, 0
	}
	return (after.Sum(name+"_sum", match) - before.Sum(name+"_sum", match)) / count, count
}

// Delta is how much counter name grew between two scrapes.
func Delta(before, after Metrics, name string, match map[string]string) float64 {
	return after.Sum(name, match) - before.Sum(name, match)
}
