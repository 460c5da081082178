package codec

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"
)

// Helpers of the OpenAI translators' tests.

// oaiPtr returns a pointer to v.
func oaiPtr[T any](v T) *T { return &v }

// oaiSameJSON fails unless got and want are equal JSON values
// (whatever their key order and spacing).
func oaiSameJSON(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("expected value is not JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("JSON differs\n got: %s\nwant: %s", got, want)
	}
}

// oaiSameValue fails unless got and want are deeply equal, showing
// both as JSON.
func oaiSameValue[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
		if gv.Kind() == reflect.Slice && wv.Kind() == reflect.Slice {
			for i := 0; i < gv.Len() && i < wv.Len(); i++ {
				if !reflect.DeepEqual(gv.Index(i).Interface(), wv.Index(i).Interface()) {
					t.Fatalf("%s differ first at [%d]\n got: %+v\nwant: %+v", what, i, gv.Index(i).Interface(), wv.Index(i).Interface())
				}
			}
			t.Fatalf("%s: %d elements, want %d", what, gv.Len(), wv.Len())
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("%s differs\n got: %s\nwant: %s", what, g, w)
	}
}

// oaiField is the string at path in the JSON text raw.
func oaiField(raw, path string) string { return gjson.Get(raw, path).Str }
