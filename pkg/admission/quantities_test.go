package admission

import (
	"context"
	"net/http"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestExponentBeyondBound(t *testing.T) {
	for s, want := range map[string]bool{
		"1e18": false, "1e1000": false, "1e-1000": false, "1E+1000": false, "1e0001000": false,
		"1e1001": true, "1e-1001": true, "5E-99999999": true, "1e2147483647": true, "1e-2147483647": true,
		"100m": false, "8Ei": false, "1e": false, "e12345": false, "1e12x45": false, "": false,
	} {
		if got := exponentBeyondBound(s); got != want {
			t.Errorf("exponentBeyondBound(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestQuantityGuard(t *testing.T) {
	guarded := quantityGuard{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	}), fields: bindingQuantityFields}
	cases := map[string]struct {
		object   string
		wantCode int32
		wantPath string
	}{
		"a binding's request": {
			object:   `{"spec":{"replicaRequirements":{"resourceRequest":{"cpu":"1e-2147483647"}}}}`,
			wantCode: http.StatusBadRequest, wantPath: "spec.replicaRequirements.resourceRequest[cpu]",
		},
		"a component's request": {
			object:   `{"spec":{"components":[{"replicaRequirements":{"resourceRequest":{"cpu":"1"}}},{"replicaRequirements":{"resourceRequest":{"memory":"3E+5000"}}}]}}`,
			wantCode: http.StatusBadRequest, wantPath: "spec.components[1].replicaRequirements.resourceRequest[memory]",
		},
		"the same string elsewhere is a name, not a quantity": {
			object: `{"metadata":{"name":"1e1000000","labels":{"v":"2e-99999"}},"spec":{"replicaRequirements":{"resourceRequest":{"cpu":"1e3"}}}}`,
		},
		"ordinary quantities":           {object: `{"spec":{"replicaRequirements":{"resourceRequest":{"cpu":"250m","memory":"1e9"}}}}`},
		"not JSON is the decoder's say": {object: `{"spec":`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			resp := guarded.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Object: rawExtension(tc.object),
			}})
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("took %s", elapsed)
			}
			if tc.wantCode == 0 {
				if !resp.Allowed {
					t.Errorf("refused: %v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result.Code != tc.wantCode {
				t.Fatalf("response = %v, want code %d", resp.Result, tc.wantCode)
			}
			if got := resp.Result.Message; len(got) < len(tc.wantPath) || got[:len(tc.wantPath)] != tc.wantPath {
				t.Errorf("message %q does not start with the path %s", got, tc.wantPath)
			}
		})
	}
}

func rawExtension(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }
