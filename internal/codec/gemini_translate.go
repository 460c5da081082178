package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

var _ Translator = gemini{}

// DecodeRequest reads a Gemini generateContent request into canonical
// form. The model is in the URL, not the body: Request.Model stays empty
// and the proxy sets it, as it sets Stream for streamGenerateContent.
// Field names are taken in camelCase and in the snake_case Google's REST
// examples use. What only Gemini can express (non-image inline data, file
// data that is not an image, code execution parts, Google's built-in tools,
// cached content, JSON output, other modalities, logprobs) is recorded in
// Request.Needs. safetySettings, presencePenalty, frequencyPenalty and seed
// are dropped when the request is translated. A functionCall without an id
// gets "call_<n>" (n counting the request's calls from 1), and a
// functionResponse without one answers the first unanswered call of its
// name in the latest content that has one.
func (gemini) DecodeRequest(body []byte) (*Request, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("request body: invalid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, errors.New("request body: must be a JSON object")
	}
	d := geminiRequestDecoder{r: &Request{}}
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		if v.Type != gjson.Null {
			err = d.field(camelKey(k.Str), v)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if !d.sawContents {
		return nil, errors.New("contents: field required")
	}
	d.restrictTools()
	return d.r, nil
}

// geminiRequestDecoder holds what DecodeRequest learns across fields.
type geminiRequestDecoder struct {
	r           *Request
	sawContents bool
	// calls are the request's function calls so far, to give responses
	// without an id the id of the call they answer.
	calls []geminiCall
	// allowed are toolConfig's allowedFunctionNames.
	allowed []string
}

type geminiCall struct {
	id, name string
	// turn is the index of the content holding the call.
	turn     int
	answered bool
}

// answer marks the call a functionResponse answers and returns its id:
// the call with the response's id, or else the first unanswered call of
// its name in the latest content that has one (parallel calls of one
// function are answered in order). A response's own id is kept even when
// no call has it; "" means no call is answered.
func (d *geminiRequestDecoder) answer(id, name string) string {
	best := -1
	for i := len(d.calls) - 1; i >= 0; i-- {
		c := &d.calls[i]
		if c.answered {
			continue
		}
		if id != "" {
			if c.id == id {
				c.answered = true
				return id
			}
			continue
		}
		if c.name != name {
			continue
		}
		if best >= 0 && c.turn != d.calls[best].turn {
			break // an earlier content
		}
		best = i
	}
	if id != "" {
		return id
	}
	if best < 0 {
		return ""
	}
	d.calls[best].answered = true
	return d.calls[best].id
}

func (d *geminiRequestDecoder) field(key string, v gjson.Result) error {
	switch key {
	case "contents":
		d.sawContents = true
		return d.contents(v)
	case "systemInstruction":
		return d.system(v)
	case "tools":
		return d.tools(v)
	case "toolConfig":
		return d.toolConfig(v)
	case "generationConfig":
		return d.generationConfig(v)
	case "cachedContent":
		d.r.Need("cached_content", "gemini")
	}
	// safetySettings, labels, model, …: dropped when translated.
	return nil
}

func (d *geminiRequestDecoder) contents(v gjson.Result) error {
	return gjEach(v, "contents", d.content)
}

func (d *geminiRequestDecoder) content(i int, v gjson.Result) error {
	if !v.IsObject() {
		return fmt.Errorf("contents[%d]: must be an object", i)
	}
	var role, parts gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "role":
			role = f
		case "parts":
			parts = f
		}
		return true
	})
	var m Message
	switch role.Str {
	case "", "user", "function": // "function": the older API's turn of function responses
		m.Role = RoleUser
	case "model":
		m.Role = RoleAssistant
	default:
		return fmt.Errorf(`contents[%d].role: must be "user" or "model"`, i)
	}
	if !parts.IsArray() {
		return fmt.Errorf("contents[%d].parts: must be an array", i)
	}
	var err error
	j := 0
	parts.ForEach(func(_, pv gjson.Result) bool {
		var p Part
		var keep bool
		p, keep, err = d.part(pv, func() string { return fmt.Sprintf("contents[%d].parts[%d]", i, j) })
		if keep {
			m.Parts = append(m.Parts, p)
		}
		j++
		return err == nil
	})
	if err != nil {
		return err
	}
	d.r.Messages = append(d.r.Messages, m)
	return nil
}

// geminiPartFields are the fields of one part.
type geminiPartFields struct {
	text, inline, file, call, response gjson.Result
	thought                            bool
	signature                          string
}

// part reads one part; keep is false for a part recorded only as a Need.
func (d *geminiRequestDecoder) part(v gjson.Result, path func() string) (Part, bool, error) {
	if !v.IsObject() {
		return Part{}, false, fmt.Errorf("%s: must be an object", path())
	}
	var f geminiPartFields
	var only string // a field only Gemini can take
	v.ForEach(func(k, fv gjson.Result) bool {
		switch key := camelKey(k.Str); key {
		case "text":
			f.text = fv
		case "thought":
			f.thought = fv.Bool()
		case "thoughtSignature":
			f.signature = fv.Str
		case "inlineData":
			f.inline = fv
		case "fileData":
			f.file = fv
		case "functionCall":
			f.call = fv
		case "functionResponse":
			f.response = fv
		case "executableCode", "codeExecutionResult", "toolCall", "toolResponse":
			only = key
		}
		return true
	})
	switch {
	case f.call.Exists():
		return d.functionCall(f, path)
	case f.response.Exists():
		return d.functionResponse(f, path)
	case f.inline.Exists():
		return d.inlineData(f, path)
	case f.file.Exists():
		return d.fileData(f, path)
	case only != "":
		d.r.Need("part:"+only, "gemini")
		return Part{}, false, nil
	case f.text.Exists() || f.signature != "":
		if f.text.Exists() && f.text.Type != gjson.String {
			return Part{}, false, fmt.Errorf("%s.text: must be a string", path())
		}
		p := Part{Kind: PartText, Text: f.text.Str, Signature: f.signature}
		if f.thought {
			p.Kind = PartThinking
		}
		return p, true, nil
	}
	return Part{}, false, fmt.Errorf("%s: has no text, inlineData, fileData, functionCall or functionResponse", path())
}

func (d *geminiRequestDecoder) functionCall(f geminiPartFields, path func() string) (Part, bool, error) {
	c := f.call
	name := gjField(c, "name")
	if !c.IsObject() || name.Type != gjson.String || name.Str == "" {
		return Part{}, false, fmt.Errorf("%s.functionCall.name: field required", path())
	}
	p := Part{Kind: PartToolCall, ID: gjField(c, "id").Str, Name: name.Str, Signature: f.signature, Arguments: json.RawMessage("{}")}
	switch args := gjField(c, "args"); {
	case args.IsObject():
		p.Arguments = json.RawMessage(args.Raw)
	case args.Exists() && args.Type != gjson.Null:
		return Part{}, false, fmt.Errorf("%s.functionCall.args: must be an object", path())
	}
	if p.ID == "" {
		p.ID = fmt.Sprintf("call_%d", len(d.calls)+1)
	}
	d.calls = append(d.calls, geminiCall{id: p.ID, name: p.Name, turn: len(d.r.Messages)})
	return p, true, nil
}

func (d *geminiRequestDecoder) functionResponse(f geminiPartFields, path func() string) (Part, bool, error) {
	fr := f.response
	name := gjField(fr, "name")
	if !fr.IsObject() || name.Type != gjson.String || name.Str == "" {
		return Part{}, false, fmt.Errorf("%s.functionResponse.name: field required", path())
	}
	resp := gjField(fr, "response")
	if !resp.IsObject() {
		return Part{}, false, fmt.Errorf("%s.functionResponse.response: must be an object", path())
	}
	p := Part{Kind: PartToolResult, ID: gjField(fr, "id").Str, Name: name.Str, Signature: f.signature}
	p.Content = []Part{{Kind: PartText, Text: resp.Raw}}
	p.IsError = gjOnlyKey(resp, "error")
	p.ID = d.answer(p.ID, p.Name)
	if p.ID == "" {
		return Part{}, false, fmt.Errorf("%s.functionResponse: answers no earlier functionCall named %q", path(), p.Name)
	}
	return p, true, nil
}

func (d *geminiRequestDecoder) inlineData(f geminiPartFields, path func() string) (Part, bool, error) {
	in := f.inline
	mime, data := gjField(in, "mimeType"), gjField(in, "data")
	if !in.IsObject() || mime.Type != gjson.String || data.Type != gjson.String {
		return Part{}, false, fmt.Errorf("%s.inlineData: must be {\"mimeType\": …, \"data\": …}", path())
	}
	if !strings.HasPrefix(mime.Str, "image/") {
		d.r.Need("inline_data:"+mime.Str, "gemini")
		return Part{}, false, nil
	}
	return Part{Kind: PartImage, MediaType: mime.Str, Data: data.Str, Signature: f.signature}, true, nil
}

func (d *geminiRequestDecoder) fileData(f geminiPartFields, path func() string) (Part, bool, error) {
	fd := f.file
	uri := gjField(fd, "fileUri")
	if !fd.IsObject() || uri.Type != gjson.String || uri.Str == "" {
		return Part{}, false, fmt.Errorf("%s.fileData.fileUri: field required", path())
	}
	mime := gjField(fd, "mimeType").Str
	if mime != "" && !strings.HasPrefix(mime, "image/") {
		d.r.Need("file_data:"+mime, "gemini")
		return Part{}, false, nil
	}
	d.r.Need("image_url", "openai-chat", "openai-responses", "anthropic", "gemini")
	return Part{Kind: PartImage, URL: uri.Str, MediaType: mime, Signature: f.signature}, true, nil
}

func (d *geminiRequestDecoder) system(v gjson.Result) error {
	parts := v.Get("parts")
	if !v.IsObject() || !parts.IsArray() {
		return errors.New("systemInstruction: must be {\"parts\": [{\"text\": …}]}")
	}
	var err error
	j := 0
	parts.ForEach(func(_, p gjson.Result) bool {
		t := p.Get("text")
		if t.Type != gjson.String {
			err = fmt.Errorf("systemInstruction.parts[%d].text: must be a string", j)
			return false
		}
		d.r.System = append(d.r.System, Part{Kind: PartText, Text: t.Str})
		j++
		return true
	})
	return err
}

func (d *geminiRequestDecoder) tools(v gjson.Result) error {
	if !v.IsArray() {
		return errors.New("tools: must be an array")
	}
	var err error
	i := 0
	v.ForEach(func(_, t gjson.Result) bool {
		if !t.IsObject() {
			err = fmt.Errorf("tools[%d]: must be an object", i)
			return false
		}
		t.ForEach(func(k, tv gjson.Result) bool {
			switch key := camelKey(k.Str); key {
			case "functionDeclarations":
				err = d.declarations(i, tv)
			default: // googleSearch, codeExecution, urlContext, …
				d.r.Need("tool:"+key, "gemini")
			}
			return err == nil
		})
		i++
		return err == nil
	})
	return err
}

func (d *geminiRequestDecoder) declarations(i int, v gjson.Result) error {
	if !v.IsArray() {
		return fmt.Errorf("tools[%d].functionDeclarations: must be an array", i)
	}
	var err error
	j := 0
	v.ForEach(func(_, f gjson.Result) bool {
		name := gjField(f, "name")
		if name.Type != gjson.String || name.Str == "" {
			err = fmt.Errorf("tools[%d].functionDeclarations[%d].name: field required", i, j)
			return false
		}
		t := Tool{Name: name.Str, Description: gjField(f, "description").Str}
		if s := gjField(f, "parametersJsonSchema"); s.IsObject() {
			t.Schema = json.RawMessage(s.Raw)
		} else if s := gjField(f, "parameters"); s.IsObject() {
			t.Schema = appendJSONSchema(nil, s)
		}
		d.r.Tools = append(d.r.Tools, t)
		j++
		return true
	})
	return err
}
