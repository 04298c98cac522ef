-- Drives `genai lsp` from Neovim's built-in LSP client (headless) to run a project command as
-- a code action: opens $GENAI_TEST_FILE (whose folder holds `.genai/commands/shout.md`, titled
-- "Shout"), selects lines 2-3, picks "genai: Shout" from the code-action menu (vim.ui.select
-- answered by title), waits for the server's workspace/applyEdit to change the buffer and
-- writes the file. What it saw goes to $GENAI_TEST_OUT as JSON; tests/it/lsp_neovim.rs checks
-- it, the file, and the prompt the fake model was sent. Works on Neovim 0.7 and later.
local bin = os.getenv('GENAI_BIN')
local file = os.getenv('GENAI_TEST_FILE')
local out = os.getenv('GENAI_TEST_OUT')
local wanted = 'genai: Shout'
local report = { messages = {}, notified = {}, errors = {}, edits = 0 }

local function finish()
  local f = io.open(out, 'w')
  f:write(vim.fn.json_encode(report))
  f:close()
  vim.cmd('qall!')
end

local ok, err = pcall(function()
  -- Neovim reports a failed workspace/executeCommand with vim.notify: keep what it says.
  vim.notify = function(msg)
    table.insert(report.notified, tostring(msg))
  end
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local apply = vim.lsp.handlers['workspace/applyEdit']
  local handlers = {
    ['window/showMessage'] = function(_, result)
      table.insert(report.messages, result.message)
    end,
    ['workspace/applyEdit'] = function(e, result, ctx, config)
      report.edits = report.edits + 1
      return apply(e, result, ctx, config)
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
    return client.server_capabilities ~= nil and client.server_capabilities.codeActionProvider ~= nil
  end, 20), 'genai lsp did not initialize')

  -- Select line 2 to the end of line 3 (charwise), as `v` would.
  vim.cmd('normal! 2G0v3G$\27')
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  vim.ui.select = function(items, opts, on_choice)
    local titles, chosen = {}, nil
    for _, item in ipairs(items) do
      local title = opts.format_item(item)
      table.insert(titles, title)
      if title == wanted then
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
  assert(changed, 'the command did not change the buffer (menu: ' .. vim.inspect(report.menu)
    .. ', notified: ' .. vim.inspect(report.notified) .. ')')
  vim.cmd('write')
end)
if not ok then
  table.insert(report.errors, tostring(err))
end
finish()
