package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	content := `apiVersion: v1
kind: Config
clusters:
- name: host
  cluster: {server: ` + server + `}
users:
- name: admin
  user: {token: secret}
contexts:
- name: host
  context: {cluster: host, user: admin}
current-context: host
`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHostRestConfig(t *testing.T) {
	fromFlag := writeKubeconfig(t, "https://127.0.0.1:6443")
	fromEnv := writeKubeconfig(t, "https://127.0.0.1:7443")
	cases := map[string]struct {
		path, env string
		wantHost  string
		wantErr   string
	}{
		"a file given wins over $KUBECONFIG": {path: fromFlag, env: fromEnv, wantHost: "https://127.0.0.1:6443"},
		"no file: $KUBECONFIG":               {env: fromEnv, wantHost: "https://127.0.0.1:7443"},
		"no file, no $KUBECONFIG, not in a cluster": {
			wantErr: "no host kubeconfig file given, $KUBECONFIG unset, and not running in a cluster",
		},
		"a file that does not exist": {
			path:    filepath.Join(t.TempDir(), "missing"),
			wantErr: "loading host kubeconfig",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			// Outside a pod: the in-cluster config reads these.
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			t.Setenv("KUBERNETES_SERVICE_PORT", "")
			cfg, err := HostRestConfig(tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("HostRestConfig error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("HostRestConfig: %v", err)
			}
			if cfg.Host != tc.wantHost {
				t.Errorf("Host = %s, want %s", cfg.Host, tc.wantHost)
			}
		})
	}
}
