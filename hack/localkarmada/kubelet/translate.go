package kubelet

import (
	"net"
	"sort"
	"strconv"
	"strings"
)

// Without network and mount namespaces every pod shares the machine's loopback and file system. The kubelet
// translates what a pod spec says about its own network and files into what the process can use:
//
//   - ports: every declared containerPort is given a free port on 127.0.0.1, and a listen address naming it is
//     rewritten to that port (rewriteListenAddress);
//   - paths: a volume's mountPath is rewritten to the folder the volume lives in (pathTranslator).

// rewriteListenAddress rewrites an argument whose value has the form [host]:<containerPort>, either the whole
// argument or the value of "--flag=value", to 127.0.0.1:<local port> when the pod declares containerPort. The
// host may be empty, 0.0.0.0, [::] or any name: inside a pod every one of them means "this pod", and here the
// pod is the local port. URLs ("scheme://host:port") and ports the pod does not declare are left as they are.
func rewriteListenAddress(arg string, local map[int32]int) string {
	prefix, value := "", arg
	if strings.HasPrefix(arg, "-") {
		i := strings.IndexByte(arg, '=')
		if i < 0 {
			return arg
		}
		prefix, value = arg[:i+1], arg[i+1:]
	}
	if strings.Contains(value, "/") || strings.ContainsAny(value, " \t") {
		return arg
	}
	host, portText, err := net.SplitHostPort(value)
	if err != nil || strings.Contains(host, ":") && !strings.HasPrefix(value, "[") {
		return arg
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		return arg
	}
	mapped, ok := local[int32(port)]
	if !ok {
		return arg
	}
	return prefix + "127.0.0.1:" + strconv.Itoa(mapped)
}

// pathTranslator rewrites mount paths to local folders.
type pathTranslator struct {
	// mounts, longest mountPath first, so /etc/app/certs wins over /etc/app.
	mounts []pathMapping
}

type pathMapping struct{ mountPath, local string }

func newPathTranslator(mounts map[string]string) pathTranslator {
	var t pathTranslator
	for mountPath, local := range mounts {
		mountPath = strings.TrimRight(mountPath, "/")
		// "/" would claim every absolute path of the machine.
		if mountPath == "" {
			continue
		}
		t.mounts = append(t.mounts, pathMapping{mountPath, local})
	}
	sort.Slice(t.mounts, func(i, j int) bool {
		if len(t.mounts[i].mountPath) != len(t.mounts[j].mountPath) {
			return len(t.mounts[i].mountPath) > len(t.mounts[j].mountPath)
		}
		return t.mounts[i].mountPath < t.mounts[j].mountPath
	})
	return t
}

// translate rewrites every mount path that appears in value as a path prefix: at the start of the value or after
// one of = : , or a space or quote, and followed by the end, "/" or one of those separators. "/etc/app" in
// "--config=/etc/app/config.yaml" is rewritten; "/etc/application" and "x/etc/app" are not. One pass, so a
// local folder that happens to contain a mount path is never rewritten again.
func (t pathTranslator) translate(value string) string {
	if len(t.mounts) == 0 || !strings.Contains(value, "/") {
		return value
	}
	var out strings.Builder
	for i := 0; i < len(value); {
		if i == 0 || isPathSeparator(value[i-1]) {
			if m, ok := t.match(value[i:]); ok {
				out.WriteString(m.local)
				i += len(m.mountPath)
				continue
			}
		}
		out.WriteByte(value[i])
		i++
	}
	return out.String()
}

func (t pathTranslator) match(s string) (pathMapping, bool) {
	for _, m := range t.mounts {
		if !strings.HasPrefix(s, m.mountPath) {
			continue
		}
		rest := s[len(m.mountPath):]
		if rest == "" || rest[0] == '/' || isPathSeparator(rest[0]) {
			return m, true
		}
	}
	return pathMapping{}, false
}

func isPathSeparator(c byte) bool {
	switch c {
	case '=', ':', ',', ' ', '"', '\'':
		return true
	}
	return false
}
