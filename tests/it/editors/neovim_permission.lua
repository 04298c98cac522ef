-- Drives `genai lsp` from Neovim's built-in LSP client (headless) with the workspace's tools
-- on (`[lsp] tools = ["workspace"]`): `genai.ask` twice, the model editing sample.py each
-- time; genai asks through `window/showMessageRequest`, which this script answers "Allow
-- once" the first time and "Reject" the second, as a user picking a button would. What it saw
-- goes to $GENAI_TEST_OUT as JSON; tests/it/lsp_neovim.rs checks it and the file on disk.
local bin = os.getenv('GENAI_BIN')
local file = os.getenv('GENAI_TEST_FILE')
local out = os.getenv('GENAI_TEST_OUT')
local report = { asks = {}, answers = {}, errors = {} }
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
end)
if not ok then
  table.insert(report.errors, tostring(err))
end
finish()
