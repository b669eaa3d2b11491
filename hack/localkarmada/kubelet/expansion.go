package kubelet

import "strings"

// Expand replaces $(VAR) references in input the way Kubernetes expands a container's command, args and env
// values (k8s.io/kubernetes third_party/forked/golang/expansion, which cannot be imported): a reference to a
// defined variable becomes its value, a reference to an undefined one is left as written, "$$" is an escaped "$"
// (so "$$(VAR)" stays "$(VAR)"), and a "$" followed by anything else is kept. Exported for test/containers, which
// runs the chart's containers under a real runtime and expands their arguments as a kubelet does.
func Expand(input string, lookup func(string) (string, bool)) string {
	var out strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		out.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readVariable(input[cursor+1:])
		if isVar {
			if value, ok := lookup(read); ok {
				out.WriteString(value)
			} else {
				out.WriteString("$(" + read + ")")
			}
		} else {
			out.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return out.String() + input[checkpoint:]
}

// readVariable reads what follows a "$": the name of a complete "(NAME)" reference, an escaped "$", or the
// characters to copy unchanged, and how many bytes it consumed.
func readVariable(input string) (read string, isVar bool, advance int) {
	switch input[0] {
	case '$':
		return "$", false, 1
	case '(':
		if end := strings.IndexByte(input[1:], ')'); end >= 0 {
			return input[1 : end+1], true, end + 2
		}
		// An unterminated reference is kept as written.
		return "$(", false, 1
	default:
		return "$" + input[:1], false, 1
	}
}

// mappingOf looks variables up in the given maps, first match wins.
func mappingOf(maps ...map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v, true
			}
		}
		return "", false
	}
}
