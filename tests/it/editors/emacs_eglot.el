;;; emacs_eglot.el --- drives `genai lsp' from Emacs's eglot, headless  -*- lexical-binding: t -*-
;;
;; Run as `emacs --batch -l emacs_eglot.el' (Debian 12: emacs-nox 28 and elpa-eglot 1.9).
;; Opens $GENAI_TEST_FILE in python-mode, attaches `$GENAI_BIN lsp' with eglot, changes line 1
;; without saving, selects lines 2-3 and runs the code action "genai: Improve" the way
;; `M-x eglot-code-actions' does (the menu answered by title through `completing-read'),
;; lets eglot apply the server's workspace/applyEdit, saves the file, and shuts the server
;; down. What it saw goes to $GENAI_TEST_OUT as JSON; tests/it/lsp_emacs.rs checks it.

(require 'package)
(package-initialize)
(require 'eglot)
(require 'json)

(defvar genai-report (list (cons 'errors [])))

(defun genai-note (key value)
  (setq genai-report (cons (cons key value) genai-report)))

(defun genai-wait (what pred seconds)
  "Process input until PRED is true, failing with WHAT after SECONDS."
  (let ((deadline (+ (float-time) seconds)))
    (while (not (funcall pred))
      (when (> (float-time) deadline)
        (error "Timed out waiting until %s" what))
      (accept-process-output nil 0.05))))

(defun genai-finish (code)
  (with-temp-file (getenv "GENAI_TEST_OUT")
    (insert (json-encode genai-report)))
  (kill-emacs code))

(condition-case err
    (let* ((file (getenv "GENAI_TEST_FILE"))
           (eglot-server-programs `((python-mode . (,(getenv "GENAI_BIN") "lsp"))))
           ;; Server edits apply without asking (a batch Emacs has nobody to ask).
           (eglot-confirm-server-initiated-edits nil)
           (eglot-sync-connect t))
      (find-file file)
      (python-mode)
      (apply #'eglot (eglot--guess-contact))
      (genai-wait "eglot is connected" #'eglot-current-server 30)
      (let ((server (eglot-current-server)))
        (genai-note 'server (plist-get (eglot--server-info server) :name))
        ;; An unsaved change: the action must see the buffer, not the file on disk.
        (goto-char (point-min))
        (delete-region (point) (line-end-position))
        (insert "# sums two numbers")
        (eglot--signal-textDocument/didChange)
        ;; Lines 2-3 selected, as `M-x eglot-code-actions' gets them from the region.
        (let* ((beg (progn (goto-char (point-min)) (forward-line 1) (point)))
               (end (progn (forward-line 2) (point)))
               (before (buffer-string))
               (menu nil)
               ;; A keyboard event, so eglot offers its menu through `completing-read'.
               (last-nonmenu-event ?\r)
               (completing-read-function
                (lambda (_prompt collection &rest _)
                  (setq menu (mapcar #'car collection))
                  "genai: Improve")))
          (eglot-code-actions beg end nil t)
          (genai-note 'menu (vconcat menu))
          (genai-wait "the code action changes the buffer"
                      (lambda () (not (string= (buffer-string) before))) 30)
          (save-buffer)
          (genai-note 'text (buffer-string)))
        (eglot-shutdown server)
        (genai-note 'shutdown t))
      (genai-finish 0))
  (error
   (genai-note 'errors (vector (error-message-string err)))
   (genai-finish 1)))
