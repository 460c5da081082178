package codec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// The configuration fields of a Gemini request: toolConfig and
// generationConfig.

func (d *geminiRequestDecoder) toolConfig(v gjson.Result) error {
	fcc := gjField(v, "functionCallingConfig")
	if !fcc.Exists() {
		return nil
	}
	mode := strings.ToUpper(gjField(fcc, "mode").Str)
	if names := gjField(fcc, "allowedFunctionNames"); names.Exists() {
		var err error
		if d.allowed, err = gjStrings(names, "toolConfig.functionCallingConfig.allowedFunctionNames"); err != nil {
			return err
		}
	}
	tc := &d.r.ToolChoice
	switch mode {
	case "", "MODE_UNSPECIFIED", "AUTO", "VALIDATED":
		tc.Mode = ToolAuto
	case "NONE":
		tc.Mode = ToolNone
	case "ANY":
		tc.Mode = ToolAny
		if len(d.allowed) == 1 {
			tc.Mode, tc.Name = ToolNamed, d.allowed[0]
		}
	default:
		return errors.New("toolConfig.functionCallingConfig.mode: must be AUTO, ANY, NONE or VALIDATED")
	}
	return nil
}

// restrictTools keeps only the tools allowedFunctionNames names, which
// is what it means.
func (d *geminiRequestDecoder) restrictTools() {
	if len(d.allowed) == 0 {
		return
	}
	kept := d.r.Tools[:0]
	for _, t := range d.r.Tools {
		for _, n := range d.allowed {
			if t.Name == n {
				kept = append(kept, t)
				break
			}
		}
	}
	d.r.Tools = kept
}

func (d *geminiRequestDecoder) generationConfig(v gjson.Result) error {
	if !v.IsObject() {
		return errors.New("generationConfig: must be an object")
	}
	r := d.r
	var err error
	v.ForEach(func(k, f gjson.Result) bool {
		if f.Type == gjson.Null {
			return true
		}
		switch key := camelKey(k.Str); key {
		case "maxOutputTokens":
			var ok bool
			if r.MaxTokens, ok = gjPositiveInt(f); !ok {
				err = errors.New("generationConfig.maxOutputTokens: must be a positive integer")
			}
		case "temperature", "topP":
			if f.Type != gjson.Number {
				err = fmt.Errorf("generationConfig.%s: must be a number", key)
				break
			}
			x := f.Num
			if key == "temperature" {
				r.Temperature = &x
			} else {
				r.TopP = &x
			}
		case "topK":
			if f.Type != gjson.Number || f.Num < 1 {
				err = errors.New("generationConfig.topK: must be a positive number")
				break
			}
			n := int64(f.Num)
			r.TopK = &n
		case "stopSequences":
			r.Stop, err = gjStrings(f, "generationConfig.stopSequences")
		case "candidateCount":
			if f.Int() > 1 {
				r.Need("n", "gemini")
			}
		case "thinkingConfig":
			d.thinkingConfig(f)
		case "responseMimeType":
			if f.Str == "application/json" || f.Str == "text/x.enum" {
				r.Need("response_format", "gemini")
			}
		case "responseSchema", "responseJsonSchema", "_responseJsonSchema":
			r.Need("response_format", "gemini")
		case "responseModalities":
			f.ForEach(func(_, m gjson.Result) bool {
				if !strings.EqualFold(m.Str, "TEXT") {
					r.Need("response_modalities", "gemini")
				}
				return true
			})
		case "speechConfig":
			r.Need("speech_config", "gemini")
		case "responseLogprobs", "logprobs":
			if f.Bool() || f.Int() > 0 {
				r.Need("logprobs", "gemini")
			}
		}
		// presencePenalty, frequencyPenalty, seed, mediaResolution, …:
		// dropped when translated.
		return err == nil
	})
	return err
}

// thinkingConfig reads thinkingBudget (0 turns thinking off, -1 lets the
// model choose: a medium effort), thinkingLevel (an effort) and
// includeThoughts.
func (d *geminiRequestDecoder) thinkingConfig(v gjson.Result) {
	budget, level := gjField(v, "thinkingBudget"), gjField(v, "thinkingLevel").Str
	include := gjField(v, "includeThoughts").Bool()
	switch {
	case budget.Exists() && budget.Int() == 0:
		d.r.Thinking = nil
	case budget.Int() > 0:
		d.r.Thinking = &Thinking{BudgetTokens: budget.Int()}
	case level != "" && !strings.EqualFold(level, "THINKING_LEVEL_UNSPECIFIED"):
		d.r.Thinking = &Thinking{Effort: strings.ToLower(level)}
	case budget.Exists() || include:
		d.r.Thinking = &Thinking{Effort: "medium"}
	}
}
