-- Drives `genai lsp` from Neovim's built-in LSP client (headless), as a user would:
-- opens $GENAI_TEST_FILE, selects lines 2-3, picks "genai: Improve" from the code-action
-- menu (vim.ui.select answered by title), waits for the server's workspace/applyEdit to
-- change the buffer, writes the file, then runs `genai.ask` about the file. Everything it
-- saw goes to $GENAI_TEST_OUT as JSON; the Rust test (tests/it/lsp_neovim.rs) checks it.
-- Works on Neovim 0.7 (Debian 12) and later.
local bin = os.getenv('GENAI_BIN')
local file = os.getenv('GENAI_TEST_FILE')
local out = os.getenv('GENAI_TEST_OUT')
local report = { progress = {}, messages = {}, errors = {} }

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
    ['$/progress'] = function(_, result)
      table.insert(report.progress, result.value)
    end,
    ['window/showMessage'] = function(_, result)
      table.insert(report.messages, result.message)
    end,
  }
  local id = vim.lsp.start_client({
    name = 'genai',
    cmd = { bin, 'lsp' },
    root_dir = vim.fn.fnamemodify(file, ':h'),
    handlers = handlers,
    on_exit = function(code)
      report.exit_code = code
    end,
  })
  assert(id, 'the client did not start')
  vim.lsp.buf_attach_client(buf, id)
  local client = vim.lsp.get_client_by_id(id)
  assert(vim.wait(20000, function()
    return client.server_capabilities ~= nil and client.server_capabilities.codeActionProvider ~= nil
  end, 20), 'genai lsp did not initialize')
  report.capabilities = client.server_capabilities

  -- An unsaved change first: the action must see the buffer, not the file on disk.
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { '# sums two numbers' })

  -- Select line 2 to the end of line 3 (charwise), as `v` would.
  vim.cmd('normal! 2G0v3G$\27')
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  vim.ui.select = function(items, opts, on_choice)
    local titles, chosen = {}, nil
    for _, item in ipairs(items) do
      local title = opts.format_item(item)
      table.insert(titles, title)
      if title == 'genai: Improve' then
        chosen = item
      end
    end
    report.menu = titles
    on_choice(chosen)
  end
  vim.lsp.buf.range_code_action()
  local changed = vim.wait(30000, function()
    local now = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    return table.concat(now, '\n') ~= table.concat(before, '\n')
  end, 20)
  assert(changed, 'the code action did not change the buffer (menu: ' .. vim.inspect(report.menu) .. ')')
  vim.cmd('write')

  -- genai.ask about the file, with the request's own answer.
  local params = {
    command = 'genai.ask',
    arguments = { { prompt = 'What does this file do?', uri = vim.uri_from_bufnr(buf) } },
  }
  local res, ask_err = client.request_sync('workspace/executeCommand', params, 30000, buf)
  assert(res and not res.err, 'genai.ask failed: ' .. vim.inspect(res or ask_err))
  report.ask = res.result

  -- A bad request gets an error and the server lives on.
  local bad = client.request_sync('workspace/executeCommand', { command = 'genai.action', arguments = { { action = 'nope' } } }, 10000, buf)
  report.bad_request = bad and bad.err
  local again = client.request_sync('textDocument/codeAction', {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 1 } },
    context = { diagnostics = {} },
  }, 10000, buf)
  report.actions_after_bad_request = again and again.result and #again.result or 0
end)
if not ok then
  table.insert(report.errors, tostring(err))
end
finish()
