package migration

import (
	"slices"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fs      fstest.MapFS
		want    []int
		wantErr bool
	}{
		{"sorted by number", fstest.MapFS{"m/0010_c.sql": file("c"), "m/0002_b.sql": file("b"), "m/0001_a.sql": file("a"), "m/README": file("x")}, []int{1, 2, 10}, false},
		{"duplicate version", fstest.MapFS{"m/0001_a.sql": file("a"), "m/1_b.sql": file("b")}, nil, true},
		{"no number", fstest.MapFS{"m/init.sql": file("a")}, nil, true},
		{"zero version", fstest.MapFS{"m/0000_a.sql": file("a")}, nil, true},
		{"missing directory", fstest.MapFS{"other/0001_a.sql": file("a")}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Load(tt.fs, "m")
			if (err != nil) != tt.wantErr {
				t.Fatalf("Load error = %v, want error %v", err, tt.wantErr)
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.Version)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("versions = %v, want %v", got, tt.want)
			}
		})
	}
	ms, err := Load(fstest.MapFS{"m/0001_a.sql": file("CREATE TABLE a (x INTEGER);")}, "m")
	if err != nil || len(ms) != 1 || ms[0] != (Migration{Version: 1, Name: "0001_a.sql", SQL: "CREATE TABLE a (x INTEGER);"}) {
		t.Errorf("Load = %+v, %v; want the file's version, name and content", ms, err)
	}
}
