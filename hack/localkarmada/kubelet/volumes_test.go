package kubelet

import (
	"errors"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestVolumePayload(t *testing.T) {
	objects := fakeObjects{
		secrets: map[string]*corev1.Secret{
			"cert": {Data: map[string][]byte{"tls.crt": []byte("CERT"), "tls.key": []byte("KEY"), "ca.crt": []byte("CA")}},
		},
		configMaps: map[string]*corev1.ConfigMap{
			"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "ROOT"}},
			"mixed":            {Data: map[string]string{"a": "text"}, BinaryData: map[string][]byte{"b": {0, 1}}},
		},
		tokens: map[string]string{"": "default-audience-token", "vault": "vault-token"},
	}
	// file renders a payload entry as "<content> <mode>" for comparison.
	type file = string
	render := func(p map[string]fileProjection) map[string]file {
		out := map[string]file{}
		for k, v := range p {
			out[k] = string(v.Data) + " " + modeString(v.Mode)
		}
		return out
	}
	cases := []struct {
		name    string
		volume  corev1.VolumeSource
		want    map[string]file
		wantErr string
	}{
		{
			name:   "secret, every key, default mode",
			volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "cert", DefaultMode: ptr.To[int32](0o644)}},
			want:   map[string]file{"tls.crt": "CERT 0644", "tls.key": "KEY 0644", "ca.crt": "CA 0644"},
		},
		{
			name: "secret items, with paths and modes",
			volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "cert", DefaultMode: ptr.To[int32](0o440), Items: []corev1.KeyToPath{
				{Key: "tls.crt", Path: "certs/server.crt"}, {Key: "tls.key", Path: "certs/server.key", Mode: ptr.To[int32](0o400)},
			}}},
			want: map[string]file{"certs/server.crt": "CERT 0440", "certs/server.key": "KEY 0400"},
		},
		{
			name:   "optional missing secret is empty",
			volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent", Optional: ptr.To(true)}},
			want:   map[string]file{},
		},
		{
			name:    "missing secret",
			volume:  corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent"}},
			wantErr: `secret "absent" not found`,
		},
		{
			name: "missing key",
			volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "cert", Items: []corev1.KeyToPath{
				{Key: "nope", Path: "nope"}}}},
			wantErr: "references non-existent secret key: nope",
		},
		{
			name:   "configMap with binary data",
			volume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "mixed"}}},
			want:   map[string]file{"a": "text 0644", "b": "\x00\x01 0644"},
		},
		{
			name: "downwardAPI",
			volume: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "requests.cpu", Divisor: mustQuantity("1m")}},
			}}},
			want: map[string]file{"labels": "app=\"web\"\ntier=\"front\" 0644", "name": "web-0 0644", "cpu": "250 0644"},
		},
		{
			// What the ServiceAccount admission plugin adds to every pod.
			name: "projected service account volume",
			volume: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "vault/token"}},
			}}},
			want: map[string]file{"token": "default-audience-token@web 0644", "ca.crt": "ROOT 0644", "namespace": "team-a 0644",
				"vault/token": "vault-token@web 0644"},
		},
		{
			name: "projected with a missing secret",
			volume: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}}}},
			wantErr: `secret "absent" not found`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := &corev1.Volume{Name: "v", VolumeSource: tc.volume}
			got, err := volumePayload(testPod(), v, objects, nil)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, render(got)); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnsupportedVolumes(t *testing.T) {
	for _, v := range []corev1.Volume{
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
	} {
		if _, err := kindOf(&v); !errors.Is(err, errUnsupportedVolume) {
			t.Errorf("%s: %v, want errUnsupportedVolume", v.Name, err)
		}
	}
	for _, v := range []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}},
	} {
		if _, err := kindOf(&v); err != nil {
			t.Errorf("%s: %v", v.Name, err)
		}
	}
}

func modeString(mode int32) string { return "0" + strconv.FormatInt(int64(mode), 8) }

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
