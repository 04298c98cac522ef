-- Drives `genai lsp` from Neovim's built-in LSP client (headless) with the workspace's tools
-- on (`[lsp] tools = ["workspace"]`): an unsaved line is added to sample.py's buffer, then
-- `genai.ask` twice, the model reading and editing sample.py; genai asks through
-- `window/showMessageRequest`, which this script answers "Allow once" the first time and
-- "Reject" the second, as a user picking a button would, and the allowed edit comes back as
-- `workspace/applyEdit`, which Neovim's own handler applies to the buffer. What it saw (and
-- the buffer's text) goes to $GENAI_TEST_OUT as JSON; tests/it/lsp_neovim.rs checks it and
-- the file on disk.
local bin = os.getenv('GENAI_BIN')
local file = os.getenv('GENAI_TEST_FILE')
local out = os.getenv('GENAI_TEST_OUT')
local report = { asks = {}, answers = {}, errors = {}, edits = 0 }
local buttons = { 'Allow once', 'Reject' }

local function finish()
  local f = io.open(out, 'w')
  f:write(vim.fn.json_encode(report))
  f:close()
  vim.cmd('qall!')
end

local ok, err = pcall(function()
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local handlers = {
    ['window/showMessageRequest'] = function(_, result)
      table.insert(report.asks, result)
      local wanted = buttons[#report.asks]
      for _, action in ipairs(result.actions or {}) do
        if action.title == wanted then
          return action
        end
      end
      return vim.NIL
    end,
  }
  local apply = vim.lsp.handlers['workspace/applyEdit']
  handlers['workspace/applyEdit'] = function(err, result, ctx, config)
    report.edits = report.edits + 1
    return apply(err, result, ctx, config)
  end
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { '# an unsaved line' })
  local id = vim.lsp.start_client({
    name = 'genai',
    cmd = { bin, 'lsp' },
    root_dir = vim.fn.fnamemodify(file, ':h'),
    handlers = handlers,
  })
  assert(id, 'the client did not start')
  vim.lsp.buf_attach_client(buf, id)
  local client = vim.lsp.get_client_by_id(id)
  assert(vim.wait(20000, function()
    return client.server_capabilities ~= nil and client.server_capabilities.executeCommandProvider ~= nil
  end, 20), 'genai lsp did not initialize')
  for round = 1, 2 do
    local params = { command = 'genai.ask', arguments = { { prompt = 'Tidy sample.py, round ' .. round } } }
    local res, ask_err = client.request_sync('workspace/executeCommand', params, 30000, buf)
    assert(res and not res.err, 'genai.ask failed: ' .. vim.inspect(res or ask_err))
    table.insert(report.answers, res.result)
  end
  report.buffer = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') .. '\n'
  report.modified = vim.bo[buf].modified
end)
if not ok then
  table.insert(report.errors, tostring(err))
end
finish()
