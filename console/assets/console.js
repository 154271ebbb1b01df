// The console's one script: it only improves pages that work without it.
'use strict'
document.addEventListener('DOMContentLoaded', function () {
  const dialog = document.getElementById('secret-dialog')
  const copy = document.getElementById('copy-secret')
  const secret = document.getElementById('secret')
  const status = document.getElementById('copy-status')
  if (dialog === null || copy === null || secret === null || status === null) return
  if (typeof dialog.showModal === 'function') {
    // Open inline for browsers without script; modal (focus kept inside) with it.
    dialog.close()
    dialog.showModal()
  }
  // Once closed, the secret is gone from the page for good, and focus goes to the page's
  // content: the button that asked for the key was on the form page before this one.
  dialog.addEventListener('close', function () {
    // The close() before showModal() above fires this too, later: the dialog is open again then.
    if (dialog.open) return
    secret.value = ''
    secret.closest('p').remove()
    copy.remove()
    status.textContent = ''
    const main = document.getElementById('main')
    if (main !== null) main.focus()
  })
  if (navigator.clipboard === undefined) return
  copy.hidden = false
  copy.addEventListener('click', function () {
    navigator.clipboard.writeText(secret.value).then(function () {
      status.textContent = 'Copied'
    }, function () {
      secret.select()
      status.textContent = 'Copy failed: the key is selected, copy it with your keyboard'
    })
  })
})
