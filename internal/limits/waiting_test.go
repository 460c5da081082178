package limits

import (
	"maps"
	"testing"
)

func TestWaiting(t *testing.T) {
	var w Waiting
	d1 := w.Add("u", Tenant{Key: "a"})
	d2 := w.Add("u", Tenant{Key: "a"})
	d3 := w.Add("u", Tenant{Key: "x", Class: ClassBatch})
	d4 := w.Add("v", Tenant{Key: "a", Class: ClassCritical})
	byClass, byKey := w.Of("u")
	if want := map[string]int{"interactive": 2, "batch": 1}; !maps.Equal(byClass, want) {
		t.Fatalf("by class = %v, want %v", byClass, want)
	}
	if want := map[string]int{"a": 2, "x": 1}; !maps.Equal(byKey, want) {
		t.Fatalf("by key = %v, want %v", byKey, want)
	}
	d1()
	d2()
	d3()
	if byClass, byKey := w.Of("u"); byClass != nil || byKey != nil {
		t.Fatalf("after every waiter left: %v, %v; want none", byClass, byKey)
	}
	if byClass, _ := w.Of("v"); byClass["critical"] != 1 {
		t.Fatalf("v by class = %v, want critical 1", byClass)
	}
	d4()
}
