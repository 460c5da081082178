package codec

import "iter"

// turns yields the spans [i, j) of msgs that make one turn of a protocol
// that wants roles to alternate (Anthropic, Gemini, Bedrock): a run of
// messages of one role, with the messages between them that have nothing
// the protocol can say (has reports false) folded in and the leading ones
// skipped.
func turns(msgs []Message, has func(*Message) bool) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		for i := 0; i < len(msgs); {
			if !has(&msgs[i]) {
				i++
				continue
			}
			j := i + 1
			for j < len(msgs) && (msgs[j].Role == msgs[i].Role || !has(&msgs[j])) {
				j++
			}
			if !yield(i, j) {
				return
			}
			i = j
		}
	}
}
