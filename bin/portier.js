#!/usr/bin/env node
// The compiled CLI (npm run build); see cli/portier.ts.
import '../dist/cli/portier.js'
