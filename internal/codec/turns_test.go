package codec

import (
	"slices"
	"testing"
)

func TestTurns(t *testing.T) {
	u := func(text string) Message { return Message{Role: RoleUser, Parts: []Part{{Text: text}}} }
	a := func(text string) Message { return Message{Role: RoleAssistant, Parts: []Part{{Text: text}}} }
	has := func(m *Message) bool { return m.Parts[0].Text != "" }
	tests := []struct {
		name string
		msgs []Message
		want [][2]int
	}{
		{"none", nil, nil},
		{"alternating", []Message{u("1"), a("2"), u("3")}, [][2]int{{0, 1}, {1, 2}, {2, 3}}},
		{"a run of one role is one turn", []Message{u("1"), u("2"), a("3")}, [][2]int{{0, 2}, {2, 3}}},
		{"leading empty ones are skipped", []Message{a(""), u("1"), a("2")}, [][2]int{{1, 2}, {2, 3}}},
		{"an empty one between is folded in", []Message{u("1"), a(""), u("2"), a("3")}, [][2]int{{0, 3}, {3, 4}}},
		{"nothing to say", []Message{u(""), a("")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][2]int
			for i, j := range turns(tt.msgs, has) {
				got = append(got, [2]int{i, j})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("turns = %v, want %v", got, tt.want)
			}
		})
	}
}
