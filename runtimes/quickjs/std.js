// runbox: the module `import … from 'std'` gets, QuickJS's older name of 'qjs:std'
// (compat.js loads it under that name).
export * from 'qjs:std';
