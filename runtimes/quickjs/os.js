// runbox: the module `import … from 'os'` gets, QuickJS's older name of 'qjs:os'
// (compat.js loads it under that name).
export * from 'qjs:os';
